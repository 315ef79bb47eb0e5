"""One sample's running sandbox: its host directories, its bwrap process, its exec server."""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import shutil
import signal
import socket
import tempfile
import threading
import time
from base64 import b64decode, b64encode
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, SocketStream
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
)

from labcoat._errors import MissingDependencyError
from labcoat.integrity import Blocklist
from labcoat.sandbox import _server
from labcoat.sandbox._channel import Channel, ChannelClosed
from labcoat.sandbox._command import (
    SANDBOX_SERVER,
    base_environment,
    bwrap_command,
    login_environment,
    privileged,
    proxied_network,
    python_layout,
)
from labcoat.sandbox._config import AGENT_HOME, BwrapConfig
from labcoat.sandbox._disk import SampleDisk, create_disk
from labcoat.sandbox._environment import BuiltEnvironment, ensure_environment
from labcoat.sandbox._image import ensure_image
from labcoat.sandbox._layout import (
    AGENT,
    KEPT_FILE,
    ROOT,
    SAMPLE_PREFIX,
    SampleDirs,
    User,
    chown_tree,
    claim,
    prepare_dirs,
    sandboxes_root,
    sweep_left_behind,
    write_login_profile,
)
from labcoat.sandbox._limits import Cgroup, Wanted, create_cgroup, existing_cgroup, rlimits
from labcoat.sandbox._machine import machine
from labcoat.sandbox._proxy import (
    SANDBOX_PROXY_PORT,
    SANDBOX_PROXY_SOCKET,
    FilteringProxy,
    read_network_log,
)

logger = logging.getLogger(__name__)

BWRAP_INSTALL_HINT = (
    "bubblewrap (bwrap) is not installed: install it with `apt-get install bubblewrap` "
    "(or `dnf install bubblewrap`), or choose another sandbox with --sandbox"
)
SERVER_START_TIMEOUT = 30
# how long past a command's own timeout we wait for the server before giving up on it
SERVER_GRACE = 30

_ERRORS: dict[str, type[Exception]] = {
    "FileNotFoundError": FileNotFoundError,
    "IsADirectoryError": IsADirectoryError,
    "NotADirectoryError": NotADirectoryError,
    "PermissionError": PermissionError,
    "FileExistsError": FileExistsError,
}


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (a zombie is dead, only unreaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] != "Z"


_swept = False


def _cgroup_busy(name: str) -> bool | None:
    group = existing_cgroup(name)
    return None if group is None else bool(group.pids())


def _remove_cgroup(name: str) -> None:
    group = existing_cgroup(name)
    if group is not None:
        group.remove()


async def sweep_once() -> None:
    """At the first sandbox of a process: remove what runs that died left behind."""
    global _swept
    if _swept:
        return
    _swept = True
    await anyio.to_thread.run_sync(
        lambda: sweep_left_behind(sandboxes_root(), _cgroup_busy, _remove_cgroup)
    )


def bwrap_path() -> str:
    """The bwrap executable, or a one-line error saying how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise MissingDependencyError(BWRAP_INSTALL_HINT)
    return found


class BwrapSession:
    """The sandbox of one sample. Create with `await BwrapSession.create(config)`."""

    def __init__(
        self,
        config: BwrapConfig,
        dirs: SampleDirs,
        environment: BuiltEnvironment | None,
        cgroup: Cgroup | None,
        disk: SampleDisk | None = None,
    ) -> None:
        self.config = config
        self.dirs = dirs
        self.disk = disk
        self.environment = environment
        self.env_dir = environment.path if environment is not None else None
        self.cgroup = cgroup
        self.python = python_layout()
        self.privileged = privileged()
        # root first: the exec server serves the first socket itself and forks the agent's
        self.users = {"root": ROOT, "agent": AGENT} if self.privileged else {"agent": AGENT}
        self.default_user = self.user(config.default_user)
        self._process: Process | None = None
        self._channels: dict[str, Channel] = {}
        self._proxy: FilteringProxy | None = None
        self._job_owner: dict[int, User] = {}
        self._start_lock = anyio.Lock()
        self._stopping = threading.Lock()
        self._infrastructure: set[int] = set()
        """Host pids of bwrap and the exec servers: what a disk-quota stop spares."""
        self.network_seen = 0
        """How many proxy log entries have been reported to the sample's record."""
        self.disk_reported = 0
        self._owner_fd: int | None = None

    # --- lifecycle ---------------------------------------------------------------------

    @classmethod
    async def create(cls, config: BwrapConfig) -> BwrapSession:
        bwrap_path()
        # built (or found) first: a build runs in a sandbox of its own
        environment: BuiltEnvironment | None = None
        if config.image is not None:
            image = await ensure_image(config.image)
            environment = BuiltEnvironment(image.venv, "image", image.notes)
        elif config.environment is not None:
            environment = await ensure_environment(config.environment)
        # building a sandbox is work on the machine: not while something is being timed
        async with machine.shared():
            return await cls._create(config, environment)

    @classmethod
    async def _create(
        cls, config: BwrapConfig, environment: BuiltEnvironment | None
    ) -> BwrapSession:
        await sweep_once()
        dirs = SampleDirs(Path(tempfile.mkdtemp(prefix=SAMPLE_PREFIX, dir=sandboxes_root())))
        owner = claim(dirs.root)
        try:
            wanted = Wanted(config.memory_mb, config.pids, config.cpus)
            cgroup = create_cgroup(f"labcoat-{dirs.root.name}", wanted)
            session = cls(config, dirs, environment, cgroup)
        except BaseException:
            shutil.rmtree(dirs.root, ignore_errors=True)
            os.close(owner)
            raise
        session._owner_fd = owner
        try:
            # shielded: a mount made by a thread we stopped waiting for would outlive us
            with anyio.CancelScope(shield=True):
                session.disk = await anyio.to_thread.run_sync(
                    create_disk, dirs.root, config.disk_mb
                )
            prepare_dirs(dirs, config, session.privileged)
            write_login_profile(dirs, login_environment(config, session.python, session.env_dir))
            if proxied_network(config):
                session._proxy = FilteringProxy(
                    dirs.run / "proxy.sock",
                    Blocklist.from_json(config.blocklist),
                    dirs.root / "network.jsonl",
                )
            await session.start()
            session.disk.watch(session._stop_commands)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.close()
            raise
        return session

    @property
    def limit_mechanism(self) -> str:
        """How memory/process limits are enforced here, for the record."""
        return f"cgroup {self.cgroup.kind}" if self.cgroup else "rlimit (per process)"

    @property
    def disk_mechanism(self) -> str:
        """How the disk quota is enforced here, for the record."""
        return self.disk.mechanism if self.disk is not None else "none"

    def _sandbox_pids(self) -> set[int]:
        """Host pids of every process of the sandbox (its cgroup, else bwrap's tree)."""
        if self.cgroup is not None:
            return self.cgroup.pids()
        if self._process is None:
            return set()
        found, frontier = set(), [self._process.pid]
        while frontier:
            pid = frontier.pop()
            found.add(pid)
            for task in Path(f"/proc/{pid}/task").glob("*"):
                with contextlib.suppress(OSError, ValueError):
                    kids = (task / "children").read_text().split()
                    frontier += [int(k) for k in kids if int(k) not in found]
        return found

    def _stop_commands(self, used: int) -> None:
        """Kill every process of the sandbox but bwrap and the exec servers (the disk
        watcher calls this when the sample is over its quota)."""
        logger.warning(
            "sandbox %s is over its disk quota (%d MiB used): stopping its commands",
            self.dirs.root.name,
            used // (1024 * 1024),
        )
        with self._stopping:  # no new command starts meanwhile (exec waits)
            for _ in range(20):  # repeat: processes may fork between the scan and the kill
                doomed = {p for p in self._sandbox_pids() - self._infrastructure if _alive(p)}
                if not doomed:
                    return
                for pid in doomed:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.02)

    async def start(self) -> None:
        async with self._start_lock:
            if self._channels:
                return
            await self._spawn()

    async def _spawn(self) -> None:
        """Start bwrap running one exec server per identity (root and agent, or agent)."""
        identities = list(self.users.values())
        pairs = [socket.socketpair() for _ in identities]
        child_fds = [child.fileno() for _, child in pairs]
        argv = bwrap_command(
            self.config, self.dirs, self.python, self.env_dir, _server.__file__, bwrap_path()
        )
        argv += [
            "--",
            self.python.sandbox_executable,
            "-I",
            "-S",
            SANDBOX_SERVER,
            *map(str, child_fds),
        ]
        if self.cgroup is not None:
            # join the cgroup before bwrap forks anything, then become bwrap
            argv = ["/bin/sh", "-c", f'{self.cgroup.join_command()} && exec "$0" "$@"', *argv]
        log = open(self.dirs.root / "sandbox.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self._process = await anyio.open_process(
                argv,
                stdin=None,
                stdout=log,
                stderr=log,
                pass_fds=child_fds,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            )
        finally:
            for _, child in pairs:
                child.close()
            log.close()
        channels: dict[str, Channel] = {}
        try:
            for user, (parent, _) in zip(identities, pairs, strict=True):
                channel = Channel(await SocketStream.from_socket(parent))
                channels[user.name] = channel
                ready = None
                with anyio.move_on_after(SERVER_START_TIMEOUT):
                    ready = await channel.receive_frame()
                if not ready or not ready.get("ready"):
                    raise SandboxUnavailableError(
                        f"the bwrap sandbox did not start; see {self.dirs.root / 'sandbox.log'}:\n"
                        + self._log_tail()
                    )
                await channel.send(self._server_config(user, first=user is identities[0]))
        except BaseException:
            with anyio.CancelScope(shield=True):
                for channel in channels.values():
                    await channel.aclose()
                await self._kill_process()
            raise
        self._channels = channels
        # what runs now is the sandbox's own machinery: no command has started yet
        self._infrastructure = self._sandbox_pids()

    def _server_config(self, identity: User, first: bool) -> dict[str, Any]:
        owner = self.default_user
        # one server per sandbox runs the forwarder from 127.0.0.1:3128 to the proxy
        forward = proxied_network(self.config) and first
        return {
            "forward_proxy": (
                {"port": SANDBOX_PROXY_PORT, "socket": SANDBOX_PROXY_SOCKET} if forward else None
            ),
            "identity": identity.to_json(),
            "owner": [owner.uid, owner.gid],  # who owns files that write_file creates
            "env": base_environment(self.config, self.python, self.env_dir),
            "output_limit": SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE,
            "rlimits": rlimits(
                self.config.memory_mb, self.config.pids, self._file_size_mb(), self.cgroup
            ),
        }

    def _file_size_mb(self) -> int | None:
        """RLIMIT_FSIZE: no single file may outgrow a watched disk quota either."""
        sizes = [self.config.file_size_mb]
        if self.disk is not None and self.disk.mechanism == "watch":
            sizes.append(self.config.disk_mb)
        known = [s for s in sizes if s is not None]
        return min(known) if known else None

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.dirs.root / "sandbox.log").read_text().splitlines()[-10:])
        return ""

    async def _kill_process(self) -> None:
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await self._process.wait()
            self._process = None
        if self.cgroup is not None:
            await anyio.to_thread.run_sync(self.cgroup.kill_all)

    async def stop(self) -> None:
        """End every process of the sandbox; the directories stay (start() again to resume)."""
        async with self._start_lock:
            channels, self._channels = self._channels, {}
            self._job_owner.clear()
            await self._kill_process()
            with anyio.CancelScope(shield=True):
                for channel in channels.values():
                    await channel.aclose()

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    def network_log(self, start: int = 0) -> list[dict[str, Any]]:
        """Every request the sandbox made through the proxy: allowed, refused or failed
        (from the `start`-th on)."""
        return read_network_log(self.dirs.root / "network.jsonl", start)

    async def close(self, keep_dirs: bool = False) -> None:
        await self.stop()
        if self._proxy is not None:
            await anyio.to_thread.run_sync(self._proxy.close)
            self._proxy = None
        if self.cgroup is not None:
            await anyio.to_thread.run_sync(self.cgroup.remove)
        keep = keep_dirs or os.environ.get("LABCOAT_KEEP_SANDBOXES") == "1"

        def clean_up() -> None:
            if self.disk is not None:
                self.disk.release(keep=keep)  # unmounts an image: before removing
            if not keep:
                shutil.rmtree(self.dirs.root, ignore_errors=True)
            else:  # kept on purpose: the next run's sweep leaves it alone
                with contextlib.suppress(OSError):
                    (self.dirs.root / KEPT_FILE).touch()

        try:
            await anyio.to_thread.run_sync(clean_up)
        except BaseException:  # interrupted (the event loop is ending): finish here, now
            clean_up()
            raise
        finally:
            if self._owner_fd is not None:
                os.close(self._owner_fd)
                self._owner_fd = None

    # --- requests ----------------------------------------------------------------------

    def user(self, name: str | None) -> User:
        if name is None:
            return self.default_user
        for user in self.users.values():
            if name in (user.name, str(user.uid)):
                return user
        if name in ("root", "0"):
            raise SandboxUserUnsupportedError(
                "this bwrap sandbox runs in an unprivileged user namespace with a single "
                "user (agent); run labcoat as root for a separate root user"
            )
        raise SandboxUserUnsupportedError(f"no user {name!r} in the bwrap sandbox (agent, root)")

    def resolve(self, path: str) -> str:
        """A sandbox path; relative ones are relative to the working directory."""
        return posixpath.normpath(posixpath.join(self.config.workdir, path))

    async def _request(self, op: str, as_user: User, **fields: Any) -> dict[str, Any]:
        """Send a request to the server of `as_user` and return its reply."""
        if not self._channels:
            await self.start()
        channel = self._channels[as_user.name]
        message = {"id": channel.next_id(), "op": op, **fields}
        try:
            reply = await channel.request(message)
        except ChannelClosed as ex:
            logger.warning("bwrap sandbox %s stopped: %s", self.dirs.root.name, ex)
            await self.stop()  # the next request starts a fresh one on the same dirs
            oom = (
                " (the kernel killed it for memory)"
                if self.cgroup and self.cgroup.oom_kills()
                else ""
            )
            raise SandboxUnavailableError(f"the sandbox stopped{oom}: {ex}") from None
        except anyio.get_cancelled_exc_class():
            if op == "exec":  # the caller gave up: kill what it started
                with anyio.CancelScope(shield=True), contextlib.suppress(ChannelClosed):
                    await channel.send(
                        {"id": channel.next_id(), "op": "kill", "target": message["id"]}
                    )
            raise
        if "error" in reply:
            if reply["error"] == "OutputLimitExceededError":
                raise OutputLimitExceededError(
                    SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None
                )
            raise _ERRORS.get(reply["error"], RuntimeError)(reply["message"])
        return reply

    @property
    def _file_user(self) -> User:
        """Files are read and written by root where there is one (it can chown)."""
        return self.users.get("root", self.default_user)

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: float | None = None,
    ) -> ExecResult[str]:
        run_as = self.user(user)
        bounds = [t for t in (timeout, self.config.command_timeout) if t is not None]
        effective = min(bounds) if bounds else None
        data = input.encode() if isinstance(input, str) else input
        started = time.time()
        request = {
            "cmd": cmd,
            "cwd": self.resolve(cwd or "."),
            "env": env or {},
            "input": None if data is None else b64encode(data).decode(),
            "timeout": effective,
        }
        while self._stopping.locked():  # the disk watcher is stopping the sample's commands
            await anyio.sleep(0.01)
        async with machine.shared():
            with anyio.fail_after(None if effective is None else effective + SERVER_GRACE):
                reply = await self._request("exec", run_as, **request)
        if reply.get("timed_out"):
            raise TimeoutError(f"command timed out after {effective:g} s and was killed")
        stdout = b64decode(reply["stdout"]).decode(errors="replace")
        stderr = b64decode(reply["stderr"]).decode(errors="replace")
        over = self.disk.exceeded_since(started) if self.disk is not None else None
        if over is not None:
            stderr += (
                f"\nlabcoat: the sandbox went over its disk quota ({over['used'] / 2**30:.2f} "
                f"GiB used of {over['limit'] / 2**30:.2f} GiB): its commands were stopped\n"
            )
        return ExecResult(reply["returncode"] == 0, reply["returncode"], stdout, stderr)

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        reply = await self._request(
            "read",
            self._file_user,
            path=self.resolve(file),
            max_size=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE,
        )
        data = b64decode(reply["data"])
        return data.decode("utf-8") if text else data

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        await self._request(
            "write", self._file_user, path=self.resolve(file), data=b64encode(data).decode()
        )

    async def spawn(
        self,
        cmd: list[str],
        log: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> int:
        """Start a background process owned by the harness (a grader's helper server, say);
        returns its pid in the sandbox. It ends with job_kill or when the sandbox stops."""
        owner = self.user(user)
        reply = await self._request(
            "spawn",
            owner,
            cmd=cmd,
            log=self.resolve(log),
            cwd=self.resolve(cwd or "."),
            env=env or {},
        )
        pid = int(reply["pid"])
        self._job_owner[pid] = owner
        return pid

    def _job_user(self, pid: int) -> User:
        if pid not in self._job_owner:
            raise LookupError(f"no background process {pid}")
        return self._job_owner[pid]

    async def job_status(self, pid: int) -> tuple[bool, int | None]:
        """(running, return code) of a spawned process."""
        reply = await self._request("job_status", self._job_user(pid), pid=pid)
        return bool(reply["running"]), reply["returncode"]

    async def job_kill(self, pid: int) -> int | None:
        reply = await self._request("job_kill", self._job_user(pid), pid=pid)
        return reply["returncode"]

    def adopt(self, host_path: Path) -> None:
        """Give files placed from the host to the sandbox's default user."""
        if self.privileged:
            chown_tree(host_path, self.default_user.uid, self.default_user.gid)

    # --- host views --------------------------------------------------------------------

    def host_path(self, sandbox_path: str) -> Path | None:
        """The host path behind a sandbox path, when it lies in a bound directory."""
        path = self.resolve(sandbox_path)
        mounts = [(AGENT_HOME, self.dirs.home), ("/tmp", self.dirs.tmp)]
        mounts += [(b.target, Path(b.source)) for b in self.config.binds]
        for target, source in sorted(mounts, key=lambda m: -len(m[0])):
            if path == target or path.startswith(target.rstrip("/") + "/"):
                return source / posixpath.relpath(path, target)
        return None

    @property
    def server_pid_on_host(self) -> int | None:
        """Host pid of the exec server (for `nsenter`), found through bwrap's children."""
        if self._process is None:
            return None
        pid = self._process.pid
        for _ in range(3):  # bwrap -> (pid-1 init) -> server
            children = Path(f"/proc/{pid}/task/{pid}/children")
            with contextlib.suppress(OSError):
                kids = children.read_text().split()
                if kids:
                    pid = int(kids[0])
        return pid

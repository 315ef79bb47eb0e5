"""A running sandbox's processes: bwrap, one exec server per identity, the channels to
them; starting and stopping them, and stopping or pausing the commands that run in it."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, SocketStream
from inspect_ai.util import SandboxEnvironmentLimits, SandboxUnavailableError

from labcoat.sandbox import _server
from labcoat.sandbox._built import BuiltEnvironment
from labcoat.sandbox._channel import Channel
from labcoat.sandbox._command import (
    PythonLayout,
    base_environment,
    bwrap_command,
    bwrap_path,
    proxied_network,
)
from labcoat.sandbox._config import BwrapConfig
from labcoat.sandbox._disk import SampleDisk
from labcoat.sandbox._gpus import Gpu
from labcoat.sandbox._layout import SampleDirs, User
from labcoat.sandbox._limits import Cgroup, rlimits
from labcoat.sandbox._paths import SANDBOX_PROXY_PORT, SANDBOX_PROXY_SOCKET, SANDBOX_SERVER
from labcoat.sandbox._seccomp import filter_fd

logger = logging.getLogger(__name__)

SERVER_START_TIMEOUT = 30


def _stat_after_name(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...); [] when the
    process is gone. The name may hold spaces and parentheses: the last ")" ends it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2 :].split()


def _state(pid: int) -> str:
    """A process's state letter (R, S, D, T, Z, ...), or "" when it is gone."""
    fields = _stat_after_name(pid)
    return fields[0] if fields else ""


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (a zombie is dead, only unreaped)."""
    return _state(pid) not in ("", "Z", "X")


def _runs(pid: int) -> bool:
    """Alive and not stopped (T: by a signal, t: by a tracer)."""
    return _state(pid) not in ("", "Z", "X", "T", "t")


def _signal(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _parent(pid: int) -> int | None:
    fields = _stat_after_name(pid)
    return int(fields[1]) if fields else None


def _generations(pids: set[int]) -> list[set[int]]:
    """`pids` by depth in their own tree: those whose parent is not among them first,
    then their children, and so on."""
    parents = {pid: _parent(pid) for pid in pids}

    def depth_of(pid: int) -> int:
        level, seen = 0, {pid}
        parent = parents.get(pid)
        while parent is not None and parent in pids and parent not in seen:
            seen.add(parent)
            level += 1
            parent = parents.get(parent)
        return level

    levels: dict[int, set[int]] = {}
    for pid in pids:
        levels.setdefault(depth_of(pid), set()).add(pid)
    return [levels[level] for level in sorted(levels)]


def _stop_in_order(pids: set[int]) -> None:
    """SIGSTOP parents before children, each generation stopped before the next is
    signalled: a shell that saw its foreground command stop while it still ran would take
    the terminal back ("Stopped") and never give it again after SIGCONT."""
    for generation in _generations(pids):
        _signal(generation, signal.SIGSTOP)
        deadline = time.monotonic() + 1.0
        while any(_runs(pid) for pid in generation) and time.monotonic() < deadline:
            time.sleep(0.001)


def _continue_in_order(pids: set[int]) -> None:
    """SIGCONT children before parents, so that no parent runs while its child is still
    stopped (SIGCONT clears the stop at once: a parent continued after sees no stop)."""
    for generation in reversed(_generations(pids)):
        _signal(generation, signal.SIGCONT)


class SessionProcesses:
    """The processes of a `SandboxSession` (the whole, which sets these attributes)."""

    config: BwrapConfig
    dirs: SampleDirs
    disk: SampleDisk | None
    env_dir: Path | None
    cgroup: Cgroup | None
    python: PythonLayout
    environment: BuiltEnvironment | None
    gpus: tuple[Gpu, ...]
    users: dict[str, User]
    default_user: User
    _process: Process | None
    _channels: dict[str, Channel]
    _job_owner: dict[int, User]
    _start_lock: anyio.Lock
    _stopping: threading.Lock
    _paused: bool
    _infrastructure: set[int]

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
                _signal(doomed, signal.SIGKILL)
                time.sleep(0.02)

    @contextlib.asynccontextmanager
    async def paused(self, spare: frozenset[int] = frozenset()) -> AsyncIterator[bool]:
        """Every command of the sandbox, background jobs included, stopped (SIGSTOP, which
        no process can catch) meanwhile and continued after; bwrap and the exec servers run
        on, and no new command starts. A timing-sensitive score is measured so: a job the
        agent left running cannot load the machine only while the yardsticks are timed.
        A process that was already stopped (a person's Ctrl-Z) stays stopped. `spare`:
        host pids that run on too (a person's terminal server while their clock is paused).
        Yields whether every command stopped (False: some kept forking past the stops)."""
        self._paused = True
        stopped: set[int] = set()  # filled as it goes: continued whatever interrupts it
        try:
            yield await anyio.to_thread.run_sync(self._stop_signal_commands, stopped, spare)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_continue_in_order, stopped)
            self._paused = False

    def _stop_signal_commands(self, stopped: set[int], spare: frozenset[int]) -> bool:
        for _ in range(50):  # repeat: a process may fork between the scan and the stop
            kept = self._infrastructure | spare
            running = {p for p in self._sandbox_pids() - kept if _runs(p)}
            if not running:
                return True
            stopped |= running
            _stop_in_order(running)
            time.sleep(0.01)
        logger.warning("sandbox %s: some commands would not stop", self.dirs.root.name)
        return False

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
        seccomp = filter_fd()
        argv = bwrap_command(
            self.config,
            self.dirs,
            self.python,
            self.env_dir,
            _server.__file__,
            bwrap_path(),
            gpus=self.gpus,
            host_paths=self.environment.host_paths if self.environment else (),
            seccomp_fd=seccomp,
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
                pass_fds=(*child_fds, seccomp),
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            )
        finally:
            for _, child in pairs:
                child.close()
            os.close(seccomp)
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
            "env": base_environment(self.config, self.python, self.env_dir, self.gpus),
            "output_limit": SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE,
            "rlimits": rlimits(
                self.config.memory_mb,
                self.config.pids,
                self._file_size_mb(),
                self.cgroup,
                gpus=bool(self.gpus),
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

"""One running sandbox: its host folder, limits, disk and proxy, started and closed.

`SandboxSession` is the whole; its parts each have a module: the processes
(`_session_process`), requests to them (`_session_requests`), clean-up
(`_session_cleanup`). A session mounts an environment that is already built; building
one (`_environment`, `_image`) runs in a session of its own, and `BwrapSession`
(`_sample`) is the one that builds first.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Self

import anyio
from anyio.abc import Process

from labcoat.integrity import Blocklist
from labcoat.sandbox._built import BuiltEnvironment
from labcoat.sandbox._channel import Channel
from labcoat.sandbox._command import bwrap_path, login_environment, proxied_network, python_layout
from labcoat.sandbox._config import BwrapConfig
from labcoat.sandbox._disk import SampleDisk, create_disk
from labcoat.sandbox._gpus import Gpu
from labcoat.sandbox._layout import (
    AGENT,
    ROOT,
    SAMPLE_PREFIX,
    Isolation,
    SampleDirs,
    User,
    chown_tree,
    claim,
    isolation,
    prepare_dirs,
    sandboxes_root,
    write_login_profile,
)
from labcoat.sandbox._limits import Cgroup, Wanted, create_cgroup
from labcoat.sandbox._machine import machine
from labcoat.sandbox._paths import AGENT_HOME
from labcoat.sandbox._proxy import FilteringProxy, read_network_log
from labcoat.sandbox._session_cleanup import keep_all, remove_sample_folder, sweep_once
from labcoat.sandbox._session_requests import SessionRequests


class SandboxSession(SessionRequests):
    """A running sandbox. Open with `await SandboxSession.open(config, environment)`."""

    def __init__(
        self,
        config: BwrapConfig,
        dirs: SampleDirs,
        environment: BuiltEnvironment | None,
        cgroup: Cgroup | None,
        disk: SampleDisk | None = None,
        gpus: tuple[Gpu, ...] = (),
    ) -> None:
        self.config = config
        self.gpus = gpus
        """The GPUs whose device nodes the sandbox binds (held by whoever opened it)."""
        self.dirs = dirs
        self.disk = disk
        self.environment = environment
        self.env_dir = environment.path if environment is not None else None
        self.cgroup = cgroup
        self.python = python_layout(config)
        self.isolation = isolation()
        self.privileged = self.isolation is not Isolation.ONE_USER
        """Whether root and the agent are separate users (as root, or a mapped range)."""
        # root first: the exec server serves the first socket itself and forks the agent's
        self.users = {"root": ROOT, "agent": AGENT} if self.privileged else {"agent": AGENT}
        self.default_user = self.user(config.default_user)
        self._process: Process | None = None
        self._channels: dict[str, Channel] = {}
        self._proxy: FilteringProxy | None = None
        self._job_owner: dict[int, User] = {}
        self._start_lock = anyio.Lock()
        self._stopping = threading.Lock()
        self._paused = False
        """Its commands are stopped while a score is timed (`paused()`): none starts."""
        self._infrastructure: set[int] = set()
        """Host pids of bwrap and the exec servers: what a disk-quota stop spares."""
        self.network_seen = 0
        """How many proxy log entries have been reported to the sample's record."""
        self.disk_reported = 0
        self._owner_fd: int | None = None

    # --- lifecycle ---------------------------------------------------------------------

    @classmethod
    async def open(
        cls, config: BwrapConfig, environment: BuiltEnvironment | None, gpus: tuple[Gpu, ...] = ()
    ) -> Self:
        """Start a sandbox for `config` that mounts `environment` (built already) and
        binds `gpus` (held already)."""
        bwrap_path()
        # building a sandbox is work on the machine: not while something is being timed
        async with machine.shared():
            return await cls._open(config, environment, gpus)

    @classmethod
    async def _open(
        cls, config: BwrapConfig, environment: BuiltEnvironment | None, gpus: tuple[Gpu, ...]
    ) -> Self:
        await sweep_once()
        dirs = SampleDirs(Path(tempfile.mkdtemp(prefix=SAMPLE_PREFIX, dir=sandboxes_root())))
        owner = claim(dirs.root)
        try:
            wanted = Wanted(config.memory_mb, config.pids, config.cpus)
            cgroup = create_cgroup(f"labcoat-{dirs.root.name}", wanted)
            session = cls(config, dirs, environment, cgroup, gpus=gpus)
        except BaseException:
            shutil.rmtree(dirs.root, ignore_errors=True)
            os.close(owner)
            raise
        session._owner_fd = owner
        try:
            # shielded: a mount made by a thread we stopped waiting for would outlive us
            with anyio.CancelScope(shield=True):
                disk = await anyio.to_thread.run_sync(
                    create_disk,
                    dirs.root,
                    config.disk_mb,
                    session.privileged,  # users apart from the caller: FUSE's allow_other
                    config.disk_fuse,
                )
            session.disk = disk
            if proxied_network(config):  # first: prepare_dirs gives its socket to root
                session._proxy = FilteringProxy(
                    dirs.proxy_socket,
                    Blocklist.from_json(config.blocklist),
                    dirs.root / "network.jsonl",
                )
            prepare_dirs(dirs, config, session.privileged)
            profile = login_environment(config, session.python, session.env_dir, gpus)
            write_login_profile(dirs, profile)
            await session.start()
            disk.watch(session._stop_commands)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.close()
            raise
        return session

    async def close(self, keep_dirs: bool = False) -> None:
        """Stop everything and remove the host folder (kept with `keep_dirs` or
        LABCOAT_KEEP_SANDBOXES=1)."""
        await self.stop()
        if self._proxy is not None:
            await anyio.to_thread.run_sync(self._proxy.close)
            self._proxy = None
        if self.cgroup is not None:
            await anyio.to_thread.run_sync(self.cgroup.remove)
        keep = keep_dirs or keep_all()
        try:
            await anyio.to_thread.run_sync(remove_sample_folder, self.dirs, self.disk, keep)
        except BaseException:  # interrupted (the event loop is ending): finish here, now
            remove_sample_folder(self.dirs, self.disk, keep)
            raise
        finally:
            if self._owner_fd is not None:
                os.close(self._owner_fd)
                self._owner_fd = None

    # --- what the sandbox is and saw -----------------------------------------------------

    @property
    def limit_mechanism(self) -> str:
        """How memory/process limits are enforced here, for the record."""
        return f"cgroup {self.cgroup.kind}" if self.cgroup else "rlimit (per process)"

    @property
    def disk_mechanism(self) -> str:
        """How the disk quota is enforced here, for the record."""
        return self.disk.mechanism if self.disk is not None else "none"

    def network_log(self, start: int = 0) -> list[dict[str, Any]]:
        """Every request the sandbox made through the proxy: allowed, refused or failed
        (from the `start`-th on)."""
        return read_network_log(self.dirs.root / "network.jsonl", start)

    # --- host views --------------------------------------------------------------------

    def adopt(self, host_path: Path) -> None:
        """Give files placed from the host to the sandbox's default user."""
        if self.privileged:
            chown_tree(host_path, self.default_user.uid, self.default_user.gid)

    def host_path(self, sandbox_path: str) -> Path | None:
        """The host path behind a sandbox path, when it lies in a bound directory."""
        path = self.resolve(sandbox_path)
        mounts = [(AGENT_HOME, self.dirs.home), ("/tmp", self.dirs.tmp)]
        mounts += [(b.target, Path(b.source)) for b in self.config.binds]
        for target, source in sorted(mounts, key=lambda m: -len(m[0])):
            if path == target or path.startswith(target.rstrip("/") + "/"):
                return source / posixpath.relpath(path, target)
        return None

"""What every build shares (task environments, task images, and whatever is built next):
building each thing once per machine, the sandbox builds run in, one copy of large files,
and the error that makes a task unavailable.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

import anyio

from labcoat._errors import LabcoatError
from labcoat._unavailable import PREFIX
from labcoat._util.atomic import atomic_create
from labcoat._util.content_hash import file_digest
from labcoat._util.env import env_value
from labcoat.sandbox._config import Bind, BwrapConfig
from labcoat.sandbox._layout import cache_dir, separate_users
from labcoat.sandbox._paths import PIP_CACHE_MOUNT
from labcoat.sandbox._pip_config import host_pip_config
from labcoat.sandbox._requirements import PythonEnv
from labcoat.sandbox._session import SandboxSession

T = TypeVar("T")

DEFAULT_BUILD_TIMEOUT = 3600
BUILD_TIMEOUT_ENV = "LABCOAT_ENV_BUILD_TIMEOUT"
DEDUPE_MIN_BYTES = 256 * 1024


class EnvironmentBuildError(LabcoatError):
    """A task's Python environment cannot be built here; the task is unavailable."""

    def __init__(self, env: PythonEnv, reason: str, log: Path | None) -> None:
        self.reason = reason
        self.log = log
        where = f" (pip's output: {log})" if log else ""
        super().__init__(f"{PREFIX} {reason} [{env.describe()}]{where}")


class BuildFailed(EnvironmentBuildError):
    """A build (an image's step, a root file system) failed: what needs it is unavailable."""

    def __init__(self, reason: str, log: Path | None) -> None:
        self.reason = reason
        self.log = log
        where = f" (build output: {log})" if log else ""
        LabcoatError.__init__(self, f"{PREFIX} {reason}{where}")


def build_timeout() -> int:
    """Seconds one build command may take."""
    return int(env_value(BUILD_TIMEOUT_ENV, DEFAULT_BUILD_TIMEOUT))


# --- one build per key -------------------------------------------------------------------


async def build_once(
    folder: Path,
    key: str,
    load: Callable[[Path], T],
    build: Callable[[Path], Awaitable[T]],
    failures: dict[str, EnvironmentBuildError],
    locks: dict[str, anyio.Lock],
) -> T:
    """`load(folder/key)` when that is built (it holds `.complete`), else `build(folder/key)`:
    one builder per key across processes (a file lock) and within this one (an anyio
    lock). A build's `EnvironmentBuildError` is kept in `failures` and raised again."""
    path = folder / key
    if (path / ".complete").exists():
        return load(path)
    if key in failures:
        raise failures[key]
    async with locks.setdefault(key, anyio.Lock()):
        if key in failures:
            raise failures[key]
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / f"{key}.lock", "w")  # noqa: SIM115 - held while building
        try:
            # another process may be building the same thing
            await anyio.to_thread.run_sync(fcntl.flock, handle, fcntl.LOCK_EX)
            if (path / ".complete").exists():
                return load(path)
            try:
                return await build(path)
            except EnvironmentBuildError as exc:
                failures[key] = exc
                raise
        finally:
            handle.close()


# --- the sandbox a build runs in ---------------------------------------------------------


def pip_cache_dir() -> Path:
    """labcoat's own pip cache, shared by every build (bound at PIP_CACHE_MOUNT)."""
    folder = cache_dir() / "pip"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def build_config(
    workdir: str,
    binds: list[Bind],
    local_paths: Iterable[Path],
    env: dict[str, str],
    as_root: bool = True,
) -> BwrapConfig:
    """A build sandbox: the host's network, no memory cap, root where there is one
    (`as_root` False: the agent, whose files are the harness's own without root).

    It sees `binds`, labcoat's pip cache, and read-only what pip may need of the host: the
    files its configuration names and `local_paths` (the requirements' local files).
    `env` comes after the host's pip configuration variables.
    """
    pip_config = host_pip_config()
    binds = [*binds, Bind(source=str(pip_cache_dir()), target=PIP_CACHE_MOUNT, writable=True)]
    seen = {b.target for b in binds}
    for path in [*pip_config.paths, *local_paths]:
        if str(path) not in seen and not str(path).startswith(("/usr/", "/proc")):
            binds.append(Bind(source=str(path), target=str(path)))
            seen.add(str(path))
    return BwrapConfig(
        environment=None,  # a build writes the environment: its staging copy is bound
        workdir=workdir,
        network=True,
        network_mode="host",
        memory_mb=None,
        pids=4096,
        file_size_mb=None,
        binds=tuple(binds),
        env={**pip_config.variables, "PIP_CACHE_DIR": PIP_CACHE_MOUNT, **env},
        default_user="root" if as_root and separate_users() else "agent",
        disk_fuse=False,  # labcoat's own work: pip's files at the host disk's speed
    )


@contextlib.asynccontextmanager
async def build_session(config: BwrapConfig) -> AsyncIterator[SandboxSession]:
    """A running build sandbox, closed (even when cancelled) when the block ends."""
    session = await SandboxSession.open(config, None)
    try:
        yield session
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()


# --- one copy of large files shared by several builds ------------------------------------


def shared_files_dir() -> Path:
    return cache_dir() / "envs" / ".files"


def dedupe(folder: Path) -> None:
    """Replace each large file under `folder` by a hard link to the one stored copy of
    the same content (a torch wheel's libraries, shared by several environments)."""
    store = shared_files_dir()
    store.mkdir(parents=True, exist_ok=True)
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root, name)
            try:
                st = path.lstat()
            except OSError:
                continue
            if not path.is_file() or path.is_symlink() or st.st_size < DEDUPE_MIN_BYTES:
                continue
            stored = store / file_digest(path, follow_links=False)
            try:
                if stored.exists():
                    # the link replaces the copy in one step; its mode is the stored file's
                    atomic_create(path, functools.partial(os.link, stored), fsync=False)
                else:
                    os.link(path, stored)
            except OSError:
                continue  # another filesystem, or a race: keep this copy

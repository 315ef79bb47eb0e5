"""The agent's workspace as a host directory, whatever sandbox provider ran the agent."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from inspect_ai.util import sandbox

from labcoat._errors import LabcoatError
from labcoat._util.tar_extract import extract_all
from labcoat.sandbox import current_bwrap_session, record_sandbox_events

SNAPSHOT_TAR = "/tmp/.labcoat-workspace.tar"


async def stop_agent_processes() -> None:
    """End everything the agent left running, so grading sees a settled workspace."""
    session = current_bwrap_session()
    if session is not None:
        record_sandbox_events(session)
        await session.stop()  # files stay; a later exec starts a fresh sandbox
        record_sandbox_events(session)  # what ran until the last moment
    else:  # other providers, best effort: every process this user may signal but itself
        await sandbox().exec(["sh", "-c", "kill -9 -1 2>/dev/null; true"])


@asynccontextmanager
async def agent_workspace(path: str) -> AsyncIterator[Path]:
    """A host directory holding `path` of the agent's sandbox.

    bwrap: the bound directory itself (no copy). Other providers: a tar snapshot copied
    out through the sandbox API into a temporary directory.
    """
    session = current_bwrap_session()
    if session is not None:
        host = session.host_path(path)
        if host is None:
            raise LabcoatError(f"{path} is not a host-backed directory of the bwrap sandbox")
        yield host
        return
    result = await sandbox().exec(["tar", "-C", path, "-cf", SNAPSHOT_TAR, "."])
    if not result.success:
        raise LabcoatError(f"could not snapshot {path} from the sandbox: {result.stderr.strip()}")
    data = await sandbox().read_file(SNAPSHOT_TAR, text=False)
    await sandbox().exec(["rm", "-f", SNAPSHOT_TAR])
    with tempfile.TemporaryDirectory(prefix="labcoat-workspace-") as tmp:
        await anyio.to_thread.run_sync(_extract, data, Path(tmp))
        yield Path(tmp)


def _extract(data: bytes, target: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        extract_all(tar, target, "data")


async def copy_into_sandbox(source: Path, path: str) -> None:
    """Copy a host directory's contents to `path` in the sample's sandbox."""
    session = current_bwrap_session()
    if session is not None:
        target = session.host_path(path)
        if target is not None:
            await anyio.to_thread.run_sync(_copy_tree, source, target)
            session.adopt(target)
            return
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(source, arcname=".")
    await sandbox().write_file(SNAPSHOT_TAR, buffer.getvalue())
    result = await sandbox().exec(
        ["sh", "-c", f"mkdir -p {path} && tar -C {path} -xf {SNAPSHOT_TAR} && rm -f {SNAPSHOT_TAR}"]
    )
    if not result.success:
        raise LabcoatError(f"could not copy files into the sandbox: {result.stderr.strip()}")


def _copy_tree(source: Path, target: Path) -> None:
    """copytree that keeps hard links as links (a kept workspace's 400 names of one file
    are restored as one file, not 400 copies)."""
    seen: dict[tuple[int, int], str] = {}

    def copy(src: str, dst: str) -> str:
        info = os.lstat(src)
        if info.st_nlink > 1:
            first = seen.setdefault((info.st_dev, info.st_ino), dst)
            if first != dst:
                os.link(first, dst)
                return dst
        return shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True, copy_function=copy)


def network_attempts() -> list[dict]:
    """Every request the agent's sandbox made through labcoat's proxy (bwrap only)."""
    session = current_bwrap_session()
    return session.network_log() if session is not None else []

"""Clean-up of sandboxes: one sample's host folder when its session closes, and what runs
that died (kill -9, a lost node) left behind, swept at a process's first sandbox."""

from __future__ import annotations

import contextlib
import os

import anyio

from labcoat.sandbox._disk import SampleDisk
from labcoat.sandbox._layout import (
    KEPT_FILE,
    SampleDirs,
    remove_tree,
    sandboxes_root,
    sweep_left_behind,
)
from labcoat.sandbox._limits import existing_cgroup

KEEP_ENV = "LABCOAT_KEEP_SANDBOXES"
"""`1`: every sample's folder is kept (and marked so that no sweep removes it)."""

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


def keep_all() -> bool:
    return os.environ.get(KEEP_ENV) == "1"


def remove_sample_folder(dirs: SampleDirs, disk: SampleDisk | None, keep: bool) -> None:
    """Release the sample's disk and remove its folder, or mark it kept."""
    if disk is not None:
        disk.release(keep=keep)  # unmounts an image: before removing
    if not keep:
        remove_tree(dirs.root)
    else:  # kept on purpose: the next run's sweep leaves it alone
        with contextlib.suppress(OSError):
            (dirs.root / KEPT_FILE).touch()

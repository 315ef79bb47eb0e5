"""Git LFS pointer files: what a clone without `git lfs pull` holds instead of content."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

LFS_HEADER = b"version https://git-lfs.github.com/spec/v1"
_MAX_POINTER_BYTES = 1024  # pointers are about 130 bytes


def is_lfs_pointer(path: Path) -> bool:
    """True when `path` is a Git LFS pointer rather than the file's content."""
    try:
        if not path.is_file() or path.stat().st_size > _MAX_POINTER_BYTES:
            return False
        with open(path, "rb") as f:
            return f.read(len(LFS_HEADER)) == LFS_HEADER
    except OSError:
        return False


def lfs_pointers(root: Path) -> Iterator[Path]:
    """Every LFS pointer file under `root` (or `root` itself)."""
    if root.is_file():
        if is_lfs_pointer(root):
            yield root
        return
    for parent, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = Path(parent, name)
            if is_lfs_pointer(path):
                yield path


def pointer_message(path: Path) -> str:
    return f"{path}: a Git LFS pointer, not the file (run `git lfs pull` in the checkout)"

"""Git LFS pointer files: what a clone without `git lfs pull` holds instead of content."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from labcoat._errors import LabcoatError
from labcoat._util.text_file import read_text

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


MAX_NAMED = 8


class LfsPointerError(LabcoatError):
    """Files that are Git LFS pointers where their content is needed; one line, names them."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = list(paths)
        base = Path(os.path.commonpath([str(p) for p in self.paths])) if self.paths else None
        if base is not None and len(self.paths) > 1 and base not in self.paths:
            names = [p.relative_to(base).as_posix() for p in self.paths]
            prefix = f"{base}: "
        else:
            names, prefix = [str(p) for p in self.paths], ""
        shown = ", ".join(names[:MAX_NAMED])
        more = len(names) - MAX_NAMED
        if more > 0:
            shown += f" and {more} more"
        noun = "a Git LFS pointer" if len(self.paths) == 1 else "Git LFS pointers"
        super().__init__(
            f"{prefix}{shown}: {noun}, not the file's content (run `git lfs pull` in the checkout)"
        )


def require_content(paths: Iterable[Path]) -> None:
    """Raise `LfsPointerError` naming every path of `paths` that is an LFS pointer."""
    pointers = [p for p in paths if is_lfs_pointer(p)]
    if pointers:
        raise LfsPointerError(pointers)


def read_content(path: Path) -> str:
    """A text file's content; `LfsPointerError` when the checkout holds only its pointer."""
    require_content([path])
    return read_text(path)

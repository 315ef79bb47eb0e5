"""Which files a run created, changed or deleted: a manifest before, one after, a diff.

A file counts as changed when its content differs or it was written again (its mtime moved):
a `reproduce.sh` that regenerates a result byte for byte, over the copy the agent left, did
produce it. The copy is made with mtimes preserved, so a file nobody wrote keeps its mtime.
Symlinks are recorded by their target, not followed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from labcoat._util.content_hash import file_digest


@dataclass(frozen=True)
class Entry:
    size: int
    mtime: float
    digest: str


Manifest = dict[str, Entry]


def manifest(root: Path) -> Manifest:
    """Every regular file and symlink under `root`, by POSIX path relative to it."""
    out: Manifest = {}
    for parent, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(parent)
        for name in sorted(files) + [d for d in dirs if (base / d).is_symlink()]:
            path = base / name
            rel = path.relative_to(root).as_posix()
            try:
                st = path.lstat()
                if path.is_symlink():
                    out[rel] = Entry(st.st_size, st.st_mtime, "symlink:" + os.readlink(path))
                elif path.is_file():
                    out[rel] = Entry(st.st_size, st.st_mtime, file_digest(path))
            except OSError:  # vanished or unreadable: not part of the result
                continue
    return out


@dataclass(frozen=True)
class FileChanges:
    created: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]

    @property
    def touched(self) -> tuple[str, ...]:
        """Created or changed: what the run produced."""
        return tuple(sorted((*self.created, *self.changed)))


def diff(before: Manifest, after: Manifest) -> FileChanges:
    created = sorted(p for p in after if p not in before)
    deleted = sorted(p for p in before if p not in after)
    changed = sorted(
        p
        for p in after
        if p in before and after[p] != before[p]  # size, mtime or content
    )
    return FileChanges(tuple(created), tuple(changed), tuple(deleted))

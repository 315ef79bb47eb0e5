"""Unpacking a tar safely on every Python 3.11, not only those with extraction filters.

`TarFile.extractall(filter=...)` came in 3.11.4; Debian 12's Python is 3.11.2. There the
same refusals are made here by hand: no member outside the folder (absolute or `..`
paths), no setuid/setgid bits, and for `data` also no links that point out, no device
files or FIFOs, and no group or other write bits.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import Literal

Kind = Literal["data", "tar"]


class UnsafeMember(tarfile.TarError):
    """A member the safe extraction refuses (a `tarfile.TarError`, as the filters' are)."""


def extract_all(tar: tarfile.TarFile, target: Path, kind: Kind = "data") -> None:
    """`tar` into `target` under the `kind` filter's rules (Python's own where it has them)."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(target, filter=kind)
        return
    root = Path(target).resolve()
    tar.extractall(root, members=[_checked(m, root, kind) for m in tar.getmembers()])


def _checked(member: tarfile.TarInfo, root: Path, kind: Kind) -> tarfile.TarInfo:
    name = member.name
    dest = (root / name).resolve()
    if os.path.isabs(name) or not dest.is_relative_to(root):
        raise UnsafeMember(f"{name!r} would be extracted outside {root}")
    if member.isdev() or (member.isfifo() and kind == "data"):
        raise UnsafeMember(f"{name!r} is a special file")
    if kind == "data" and (member.issym() or member.islnk()):
        base = dest.parent if member.issym() else root
        link = (base / member.linkname).resolve()
        if os.path.isabs(member.linkname) or not link.is_relative_to(root):
            raise UnsafeMember(f"{name!r} links outside {root}: {member.linkname!r}")
    mode = member.mode & ~0o6000  # never setuid or setgid
    if kind == "data":
        mode &= ~0o022  # no group or other write
        if member.isfile() and not mode & 0o100:
            mode &= ~0o111  # executable only where the owner's was
    member.mode = mode
    return member

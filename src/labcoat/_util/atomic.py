"""Writing a file whole or not at all: a temporary file beside it, then `os.replace`.

A reader (another run, a log listing, a browser) sees the old file or the new one, never
half of one; a write that fails leaves the old file as it was and no temporary behind.
The temporary is in the same folder (a rename is atomic only within one filesystem) and
hidden, named `.NAME.<random>.tmp`, so no listing of `*.json` or `*.eval` picks it up.

Permissions: `mode=None` gives the file the mode a plain `open(path, "w")` would (0o666
less the umask), not `mkstemp`'s 0o600; an int sets exactly that mode, umask or not.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

Writer = Callable[[BinaryIO], object]
"""Writes the content into the (binary) temporary file it is given."""

_ATTEMPTS = 16


def temp_path(path: str | os.PathLike[str]) -> Path:
    """A fresh hidden name beside `path` for its temporary (not created)."""
    target = Path(path)
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes | str | Writer,
    *,
    mode: int | None = None,
    encoding: str = "utf-8",
    fsync: bool = True,
) -> None:
    """Replace `path` by `data` (bytes, text in `encoding`, or a writer given the binary
    temporary file) in one step; `fsync` makes the content durable before the rename,
    so a crash right after it never leaves an empty file under the name."""
    target = Path(path)
    tmp, fd = _create(target)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, str):
                f.write(data.encode(encoding))
            elif isinstance(data, bytes | bytearray | memoryview):
                f.write(data)
            else:
                data(f)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def atomic_create(
    path: str | os.PathLike[str],
    create: Callable[[Path], object],
    *,
    mode: int | None = None,
    fsync: bool = True,
) -> None:
    """Replace `path` by the file `create(temporary)` makes at the path it is given (which
    does not exist yet): for writers that want a path, not a file object (a hard link,
    a library's own file writer). `mode=None` keeps the mode the file was made with."""
    target = Path(path)
    tmp = temp_path(target)
    try:
        create(tmp)
        if fsync:
            fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def _create(target: Path) -> tuple[Path, int]:
    """A new temporary beside `target`, opened for writing, with open()'s default mode."""
    for _ in range(_ATTEMPTS):
        tmp = temp_path(target)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"{target}: no free temporary name beside it")


def _remove(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)

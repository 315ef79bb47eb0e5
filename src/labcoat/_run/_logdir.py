"""The log folder of a run: checked writable before anything starts, and held by one
labcoat run at a time (two runs writing one eval set would both "succeed" and leave
each sample twice)."""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from labcoat._errors import LabcoatError

LOCK_NAME = ".labcoat.lock"
FULL_BYTES = 1024 * 1024
"""A log folder's disk with less room than this is full (a log write failed on it)."""


def is_remote(log_dir: str) -> bool:
    return "://" in log_dir  # s3://..., gs://...: Inspect checks those itself


def prepare_log_dir(log_dir: str, option: str = "--log-dir") -> Path | None:
    """Create the folder if needed and prove it is writable; None for remote logs."""
    if is_remote(log_dir):
        return None
    path = Path(log_dir).expanduser()
    try:
        if path.exists() and not path.is_dir():
            raise LabcoatError(f"{option} {log_dir}: is a file, not a folder")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as ex:
        raise LabcoatError(f"{option} {log_dir}: cannot create it ({ex.strerror})") from None
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".labcoat-probe-"):
            pass
    except OSError as ex:
        raise LabcoatError(f"{option} {log_dir}: cannot write there ({ex.strerror})") from None
    return path


def _full(path: Path) -> bool:
    """Whether the disk holding `path` has (next to) no room left, or cannot say."""
    try:
        usage = os.statvfs(path)
    except OSError:
        return True
    no_inodes = usage.f_files > 0 and usage.f_favail == 0
    return usage.f_bavail * usage.f_frsize < FULL_BYTES or no_inodes


@contextlib.contextmanager
def log_dir_lock(log_dir: str, option: str = "--log-dir") -> Iterator[None]:
    """Hold the log folder for this run; another run on it is refused with one line.

    An flock: the kernel drops it when the process dies (even by kill -9), so a dead
    run never leaves the folder locked.
    """
    # (os.path.exists: False for a name the system refuses, which prepare_log_dir names)
    created = not is_remote(log_dir) and not os.path.exists(os.path.expanduser(log_dir))
    path = prepare_log_dir(log_dir, option)
    if path is None:
        yield
        return
    lock = path / LOCK_NAME
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise LabcoatError(
                f"{option} {log_dir} is in use by another labcoat run ({holder}); wait for it "
                f"to finish, or give this run its own {option}"
            ) from None
        now = datetime.datetime.now().isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, since {now}".encode(), 0)
        try:
            yield
        except OSError as ex:
            if ex.errno in (errno.ENOSPC, errno.EDQUOT) and _full(path):
                raise LabcoatError(
                    f"{option} {log_dir}: no space left on its disk ({ex.strerror}); free some "
                    f"space or give the run another {option}, and run it again to finish"
                ) from ex
            raise
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                if created and os.listdir(path) == [LOCK_NAME]:
                    # a run that ended before writing anything leaves no empty folder
                    lock.unlink()  # still held: no other run holds this file meanwhile
                    path.rmdir()
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

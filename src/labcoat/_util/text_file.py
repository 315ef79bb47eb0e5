"""Reading a task's text files: any problem is one line naming the file."""

from __future__ import annotations

from pathlib import Path

from labcoat._errors import TaskDataError
from labcoat._util.limits import MAX_DATA_FILE_BYTES


def read_bytes(path: Path, limit: int = MAX_DATA_FILE_BYTES) -> bytes:
    """The bytes of `path`, at most `limit` of them (a larger file, a device that never
    ends, is refused before it is read); a missing or unreadable file is a TaskDataError."""
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise TaskDataError(path, None, "file not found") from None
    except IsADirectoryError:
        raise TaskDataError(path, None, "is a folder, not a file") from None
    except OSError as ex:
        raise TaskDataError(path, None, f"cannot read: {ex.strerror or ex}") from None
    if len(data) > limit:
        raise TaskDataError(path, None, f"larger than {_size(limit)}, too large to be task data")
    return data


def read_text(path: Path, limit: int = MAX_DATA_FILE_BYTES) -> str:
    """The UTF-8 text of `path`; a missing, unreadable, too large or non-UTF-8 file is a
    TaskDataError."""
    try:
        text = read_bytes(path, limit).decode("utf-8")
    except UnicodeDecodeError as ex:
        raise TaskDataError(path, f"byte {ex.start}", "not UTF-8 text") from None
    # as text mode reads it (Path.read_text): universal newlines
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _size(limit: int) -> str:
    return f"{limit / 1024 / 1024:g} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"

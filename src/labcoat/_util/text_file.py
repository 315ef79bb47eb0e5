"""Reading a task's text files: any problem is one line naming the file."""

from __future__ import annotations

from pathlib import Path

from labcoat._errors import TaskDataError


def read_text(path: Path) -> str:
    """The UTF-8 text of `path`; a missing, unreadable or non-UTF-8 file is a TaskDataError."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as ex:
        raise TaskDataError(path, f"byte {ex.start}", "not UTF-8 text") from None
    except FileNotFoundError:
        raise TaskDataError(path, None, "file not found") from None
    except IsADirectoryError:
        raise TaskDataError(path, None, "is a folder, not a file") from None
    except OSError as ex:
        raise TaskDataError(path, None, f"cannot read: {ex.strerror or ex}") from None

"""What readers of `.eval` logs say about a log they cannot read."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from urllib.parse import unquote

from labcoat._errors import one_line

Warn = Callable[[str], None]
"""Told one line per log that was skipped."""


def unreadable(location: str, ex: BaseException) -> str:
    """One line: which log could not be read, and why (an empty, truncated or corrupt file)."""
    where = unquote(location.removeprefix("file://"))
    text = one_line(ex)
    if "://" not in where and os.path.isfile(where) and os.path.getsize(where) == 0:
        reason = "an empty file"
    elif isinstance(ex, zipfile.BadZipFile) or "EOCD" in text or "zip" in text.lower():
        reason = "a truncated or corrupt .eval archive"
    else:
        reason = f"{type(ex).__name__}: {text[:200] or 'no details'}"
    return f"{where}: not a readable log ({reason})"

"""Reading JSON task files: any problem is one TaskDataError line naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from labcoat._errors import TaskDataError
from labcoat._util.limits import MAX_NESTING, check_nesting
from labcoat._util.text_file import read_text


def read_json(path: Path) -> Any:
    """The JSON document in `path`: at most MAX_DATA_FILE_BYTES, UTF-8, valid, nested at
    most MAX_NESTING deep; otherwise a TaskDataError naming the file."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as ex:
        raise TaskDataError(path, None, f"invalid JSON at line {ex.lineno}: {ex.msg}") from None
    except RecursionError:
        raise TaskDataError(path, None, f"nested more than {MAX_NESTING} levels deep") from None
    check_nesting(data, path)
    return data

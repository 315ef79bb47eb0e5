"""An OSError the user can act on (a full disk, a read-only or unwritable folder, a path
too long) as one line naming the path, instead of an internal error."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from labcoat._util.limits import shortened

_FULL = {errno.ENOSPC, errno.EDQUOT}
_PLACE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG, *_FULL}


def _inside(path: str, folder: Path) -> bool:
    """Whether `path` is `folder`, inside it, or a folder on the way to it."""
    try:
        target, base = Path(path).absolute(), folder.absolute()
    except (OSError, ValueError):
        return False
    return target == base or base in target.parents or target in base.parents


def _hint(path: str) -> str:
    from labcoat.sandbox._layout import cache_dir

    if _inside(path, cache_dir()):
        return " (labcoat's cache: set LABCOAT_CACHE to a writable folder with room)"
    home = os.environ.get("HOME")
    if home and _inside(path, Path(home)):
        return " (under HOME)"
    return ""


def user_os_error(ex: OSError) -> str | None:
    """The line for `ex` when it is about a place the user chose (or must fix), else None."""
    if ex.errno not in _PLACE:
        return None
    what = (ex.strerror or os.strerror(ex.errno or 0)).lower()
    path = ex.filename
    if path is None:
        if ex.errno not in _FULL:
            return None
        return (
            f"{what}: free some space, or give the run room elsewhere "
            "(--log-dir, LABCOAT_CACHE, TMPDIR)"
        )
    path = os.fsdecode(path)
    return f"{shortened(path)}: {what}{_hint(path)}"

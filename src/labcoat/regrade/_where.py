"""Where a regrade's logs go: beside the folder of the log it regrades, never inside it.

Inspect's `eval_set` treats every `.eval` file anywhere under its log folder as one of
its own and refuses to resume when one belongs to no task it was given (issue 45: a
regrade's log in `LOGDIR/regrades/` stopped the same eval from resuming). So the
regrades of the logs in `<folder>/` go to `<folder>.regrades/<time>/`: outside that
eval set, inside any folder that holds it (`labcoat report logs` finds them), and
`regrade_folders` names them for a report of the folder itself.
"""

from __future__ import annotations

from pathlib import Path

REGRADES_SUFFIX = ".regrades"


def _beside(folder: Path) -> Path:
    return folder.with_name(folder.name + REGRADES_SUFFIX)


def regrades_folder(log: str | Path) -> Path:
    """The folder of the regrades of `log` (an original `.eval` log)."""
    return _beside(Path(log).absolute().parent)


def regrade_folders(source: str | Path) -> list[Path]:
    """The regrade folders a local `source` (a folder of logs or one log) does not hold
    itself: the one beside it (for a log: beside its folder). Empty for remote sources."""
    text = str(source)
    if "://" in text:
        return []
    path = Path(text).absolute()
    found = _beside(path if path.is_dir() else path.parent)
    return [found] if found.is_dir() else []

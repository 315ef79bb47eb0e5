"""Where `labcoat attach` finds the sessions waiting for a person: one JSON file per live
session in the user's cache (`LABCOAT_CACHE/human-sessions`), removed when it ends.

Every eval of the user's writes there, so a session is found through its own eval (its
log folder, Inspect's run or eval id) or its own id, never by merely being the one there:
two evals on one machine would otherwise take each other's sessions."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from labcoat._util.atomic import atomic_write
from labcoat.sandbox import cache_dir

RUN_TOKEN_ENV = "LABCOAT_HUMAN_RUN"
"""Set by `labcoat eval --agent human` for its background eval: the sessions it opens."""


@dataclass(frozen=True)
class LiveSession:
    id: str
    task: str
    sample: str
    epoch: int
    terminal: str
    """The host path of the terminal server's socket."""
    pid: int
    """The eval process holding the session."""
    run: str
    """The token of the `labcoat eval` at a terminal that started the eval ("" if none)."""
    started: float
    log_dir: str = ""
    """The eval's log folder (absolute, as `labcoat attach LOGDIR` names it)."""
    run_id: str = ""
    """Inspect's id of the eval run (in the log's header)."""
    eval_id: str = ""
    """Inspect's id of the task's eval (in the log's header)."""

    def belongs_to(self, target: str) -> bool:
        """Whether `target` names this session: its id (or a prefix of it), its eval's
        run or eval id, or its eval's log folder (or a folder holding it)."""
        if target in (self.run_id, self.eval_id) or self.id.startswith(target):
            return True
        return bool(self.log_dir) and _within(self.log_dir, target)


def _within(log_dir: str, target: str) -> bool:
    if "://" in log_dir:  # a remote log folder: named as given
        return log_dir.rstrip("/") == target.rstrip("/")
    here, wanted = Path(log_dir), Path(os.path.realpath(target))
    return here == wanted or wanted in here.parents


def local_log_dir(log_location: str) -> str:
    """The log folder of a log file, absolute (resolved as `belongs_to` resolves a name)."""
    folder = log_location.rsplit("/", 1)[0] if "/" in log_location else "."
    return folder if "://" in folder else os.path.realpath(folder)


def sessions_dir() -> Path:
    return cache_dir() / "human-sessions"


def register(session: LiveSession) -> Path:
    folder = sessions_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{session.id}.json"
    atomic_write(path, json.dumps(asdict(session)))
    return path


def unregister(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_sessions(run: str | None = None) -> list[LiveSession]:
    """The sessions whose eval is still running (a killed eval's leftovers are removed)."""
    found = []
    folder = sessions_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            session = LiveSession(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if not _alive(session.pid) or not os.path.exists(session.terminal):
            unregister(path)
            continue
        if run is None or session.run == run:
            found.append(session)
    return sorted(found, key=lambda s: s.started)

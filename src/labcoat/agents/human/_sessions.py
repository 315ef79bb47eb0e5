"""Where `labcoat attach` finds the sessions waiting for a person: one JSON file per live
session in the user's cache (`LABCOAT_CACHE/human-sessions`), removed when it ends."""

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
    started: float


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

"""What builds hand to sessions: a built environment, as a sandbox mounts it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuiltEnvironment:
    """A built Python environment, as a session mounts it at /opt/labcoat/env."""

    path: Path
    source: str
    """`empty`, `harness` (linked from labcoat's own installation), `pip` or `image`."""
    notes: tuple[str, ...]
    """What was changed to install here (a CPU build for a CUDA one, a closer version)."""
    host_paths: tuple[str, ...] = ()
    """Host folders it uses besides its own (LABCOAT_TASK_PYTHON's site-packages): every
    sandbox that mounts it sees them read-only at the same paths."""

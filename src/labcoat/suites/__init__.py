"""Bundled task suites, written in the benchmarks' own native formats."""

from __future__ import annotations

from pathlib import Path

from labcoat._errors import LabcoatError
from labcoat._util.suggest import did_you_mean

SUITES_DIR = Path(__file__).parent
BUNDLED = ("mini", "gpu")
"""`mini`: CPU-sized, runs anywhere; `gpu`: needs a CUDA GPU and torch (docs/gpu.md)."""


def resolve_target(target: str) -> Path:
    """`mini` or `gpu` names a bundled suite; anything else is a path to a benchmark folder."""
    if target in BUNDLED:
        return SUITES_DIR / target
    path = Path(target).expanduser()
    if not path.exists():
        raise LabcoatError(
            f"{target}: not a bundled suite ({', '.join(BUNDLED)}) or an existing path"
            + did_you_mean(target, BUNDLED)
        )
    if not path.is_dir():
        raise LabcoatError(
            f"{target}: is a file; a target is a folder of tasks (or a bundled suite)"
        )
    return path.resolve()

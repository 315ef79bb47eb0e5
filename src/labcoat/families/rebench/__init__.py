"""RE-Bench: METR task-standard families with labcoat's sidecar (`labcoat.yaml`)."""

from labcoat.families.rebench._family import TaskFamilyDir, find_families, run_operation
from labcoat.families.rebench._preflight import preflight
from labcoat.families.rebench._scoring import normalize, rebench_scorer, score_tool
from labcoat.families.rebench._sidecar import Sidecar, TaskSpec, load_sidecar
from labcoat.families.rebench._task import discover, rebench

__all__ = [
    "Sidecar",
    "TaskFamilyDir",
    "TaskSpec",
    "discover",
    "find_families",
    "load_sidecar",
    "normalize",
    "preflight",
    "rebench",
    "rebench_scorer",
    "run_operation",
    "score_tool",
]

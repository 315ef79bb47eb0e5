"""ResearchGym: end-to-end research tasks in upstream's folder format, with labcoat's
sidecar (`labcoat.yaml`) declaring the sub-tasks, and grading the agent cannot touch."""

from labcoat.families.researchgym._folder import TaskFolder, find_tasks
from labcoat.families.researchgym._metrics import RunSummary, normalize, summarize
from labcoat.families.researchgym._preflight import preflight
from labcoat.families.researchgym._scoring import researchgym_scorer
from labcoat.families.researchgym._sidecar import Sidecar, SubtaskSpec, load_sidecar
from labcoat.families.researchgym._spec import SPEC
from labcoat.families.researchgym._task import discover, researchgym

__all__ = [
    "SPEC",
    "RunSummary",
    "Sidecar",
    "SubtaskSpec",
    "TaskFolder",
    "discover",
    "find_tasks",
    "load_sidecar",
    "normalize",
    "preflight",
    "researchgym",
    "researchgym_scorer",
    "summarize",
]

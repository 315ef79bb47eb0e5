"""What `labcoat check` needs to know of a ResearchGym task folder."""

from __future__ import annotations

from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.researchgym._folder import TaskFolder
from labcoat.families.researchgym._sidecar import SIDECAR


def preflight(entry: TaskEntry) -> Preflight:
    folder = TaskFolder(entry.path)
    sidecar = folder.sidecar
    problems = []
    if sidecar is None:
        problems.append(f"sidecar: no {SIDECAR}: sub-tasks undeclared, only self-reported scores")
    return Preflight(
        environments=[folder.environment],
        gpus=sidecar.resources.gpus if sidecar else 0,
        problems=problems,
    )

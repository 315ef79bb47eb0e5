"""What `labcoat check` needs to know of a ResearchCodeBench paper."""

from __future__ import annotations

from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.researchcodebench._papers import find_pset, load_papers
from labcoat.families.researchcodebench._task import planned_environments


def preflight(entry: TaskEntry) -> Preflight:
    pset = find_pset(entry.path.parent)
    assert pset is not None  # the entry was discovered there
    paper = next(p for p in load_papers(pset) if p.id == entry.id)
    environments, _ = planned_environments(pset, [paper], None)
    return Preflight(environments=[environments[paper.id]])

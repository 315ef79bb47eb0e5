"""What `labcoat check` needs to know of a ResearchCodeBench paper."""

from __future__ import annotations

from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.researchcodebench._environment import paper_environment
from labcoat.families.researchcodebench._papers import find_pset, load_papers
from labcoat.families.researchcodebench._task import base_environment


def preflight(entry: TaskEntry) -> Preflight:
    pset = find_pset(entry.path.parent)
    assert pset is not None  # the entry was discovered there
    paper = next(p for p in load_papers(pset) if p.id == entry.id)
    return Preflight(environments=[paper_environment(paper, base_environment(pset, None))])

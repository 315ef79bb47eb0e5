"""What `labcoat check` needs to know of a ResearchCodeBench paper."""

from __future__ import annotations

from labcoat._util.sync import run_sync
from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.researchcodebench._environment import pset_conda
from labcoat.families.researchcodebench._papers import find_pset, load_papers
from labcoat.families.researchcodebench._task import check_environments, planned_environments


def preflight(entry: TaskEntry) -> Preflight:
    """The paper's environment; with upstream's environment.yml, built as the task builds
    it (lines pip cannot install left out), and the paper unavailable with its reason."""
    pset = find_pset(entry.path.parent)
    assert pset is not None  # the entry was discovered there
    paper = next(p for p in load_papers(pset) if p.id == entry.id)
    environments, notes = planned_environments(pset, [paper], None)
    if pset_conda(pset) is None:
        return Preflight(environments=[environments[paper.id]])
    status = run_sync(check_environments, [paper], environments, notes)[paper.id]
    if status.unavailable:
        return Preflight(problems=[f"environment: unavailable: {status.unavailable}"])
    return Preflight(environments=[status.env] if status.env else [])

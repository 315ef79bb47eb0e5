"""What `labcoat check` needs to know of a PaperBench paper."""

from __future__ import annotations

from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.paperbench._papers import load_papers
from labcoat.families.paperbench._settings import DEFAULT_REQUIREMENTS, load_settings
from labcoat.sandbox import specifiers


def preflight(entry: TaskEntry) -> Preflight:
    paper = next(p for p in load_papers(entry.path.parent) if p.id == entry.id)
    settings = load_settings(paper)
    requirements = settings.requirements or DEFAULT_REQUIREMENTS
    return Preflight(environments=[specifiers(*requirements)])

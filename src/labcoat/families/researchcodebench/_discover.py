"""`labcoat list`'s view of a pset: one task per paper, its snippets as samples."""

from __future__ import annotations

from pathlib import Path

from labcoat._errors import TaskDataError
from labcoat.families._entry import TaskEntry, ValidationThresholds
from labcoat.families.researchcodebench._papers import find_pset, load_papers

FAMILY = "researchcodebench"

# validate: every snippet's reference must pass, so a paper's line-weighted oracle score
# must be exactly 1; every placeholder must fail except under upstream's weak tests, which
# are listed (the noop scores exactly their floor), not failed
THRESHOLDS = ValidationThresholds(
    oracle_min=1.0,
    noop_max=0.0,
    weak_tests_fail=False,
    reason="weak tests listed",
)


def discover(root: Path) -> list[TaskEntry]:
    """One task per paper of the pset under `root` (`root` or `root/pset`); [] if none.

    `samples` is the paper's number of snippets; `extra["lines"]` the sum of their
    weights. A folder that has `papers.yaml` but bad task data raises TaskDataError.
    """
    if find_pset(root) is None:
        return []
    entries = []
    for paper in load_papers(root):
        files = paper.parse_annotated()
        snippets = [s for f in files for s in f.snippets]
        if not snippets:
            raise TaskDataError(
                paper.folder / paper.annotated_files[0],
                None,
                f"paper {paper.id!r}: no <paper2code> snippets in its annotated files",
            )
        entries.append(
            TaskEntry(
                id=paper.id,
                family=FAMILY,
                title=paper.title,
                samples=len(snippets),
                path=paper.folder,
                thresholds=THRESHOLDS,
                extra={
                    "lines": sum(s.weight for s in snippets),
                    "annotated_files": list(paper.annotated_files),
                    "context_files": list(paper.context_files),
                    "paper_file": paper.paper_file,
                    "max_depth": max(s.depth for s in snippets) + 1,
                    **({"venue": paper.metadata["venue"]} if "venue" in paper.metadata else {}),
                },
            )
        )
    return entries

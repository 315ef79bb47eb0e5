"""What `labcoat check` needs to know of a PaperBench paper.

The generic check scans the paper's folder for Git LFS pointers; this hook adds what lies
outside it: the paper's JudgeEval submissions (`<data>/judge_eval/<paper>/<attempt>/
submission.tar`, also in LFS upstream).
"""

from __future__ import annotations

from pathlib import Path

from labcoat._util.lfs import lfs_pointers, pointer_lines
from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.paperbench._papers import load_paper
from labcoat.families.paperbench._settings import DEFAULT_REQUIREMENTS, load_settings
from labcoat.sandbox import specifiers

JUDGE_EVAL = "judge_eval"


def judge_eval_dirs(paper_dir: Path, paper_id: str) -> list[Path]:
    """The paper's JudgeEval folders in the data folder that holds `papers/`, if any."""
    if paper_dir.parent.name != "papers":
        return []
    root = paper_dir.parent.parent / JUDGE_EVAL
    names = dict.fromkeys((paper_dir.name, paper_id))
    return [root / n for n in names if (root / n).is_dir()]


def preflight(entry: TaskEntry) -> Preflight:
    paper = load_paper(entry.path)
    settings = load_settings(paper)
    requirements = settings.requirements or DEFAULT_REQUIREMENTS
    pointers = [p for d in judge_eval_dirs(entry.path, paper.id) for p in lfs_pointers(d)]
    problems = [f"lfs: {line}" for line in pointer_lines(pointers)]
    return Preflight(
        environments=[specifiers(*requirements)],
        gpus=settings.reproduce_gpus or 0,  # its reproduction's
        problems=problems,
    )

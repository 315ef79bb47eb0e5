"""Shared paths and tiny rubric builders for the PaperBench tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

PEER = Path(__file__).resolve().parents[1] / "data" / "peer" / "paperbench"
PEER_PAPERS = PEER / "papers"
PEER_JUDGE_EVAL = PEER / "judge_eval"
PEER_LEAVES = {
    "self-composing-policies": 275,
    "self-expansion": 253,
    "semantic-self-consistency": 77,
}

HOST_ENV = {
    **os.environ,
    # checks call `python3`: the tests' own interpreter (with numpy), not the machine's
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
}


def leaf(node_id: str, weight: int = 1, category: str = "Code Development", **extra: Any) -> dict:
    return {
        "id": node_id,
        "requirements": f"requirement {node_id}",
        "weight": weight,
        "sub_tasks": [],
        "task_category": category,
        "finegrained_task_category": extra.pop("finegrained", "Method Implementation"),
        **extra,
    }


def node(node_id: str, *children: dict, weight: int = 1, **extra: Any) -> dict:
    return {
        "id": node_id,
        "requirements": f"requirement {node_id}",
        "weight": weight,
        "sub_tasks": list(children),
        "task_category": None,
        "finegrained_task_category": None,
        **extra,
    }

"""ResearchCodeBench as shared code sees it (`labcoat.families._spec`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labcoat.families._provenance_hash import json_hash, top_files_hash
from labcoat.families._spec import EvalChoices, FamilyProvenance, FamilySpec, Metadata
from labcoat.families.researchcodebench._discover import FAMILY, discover
from labcoat.families.researchcodebench._preflight import preflight
from labcoat.families.researchcodebench._task import researchcodebench


def task_folder(meta: Metadata) -> Path:
    m = meta[FAMILY]
    return Path(m["pset"]) / str(m["paper"])


def provenance(meta: Metadata, scored: Metadata) -> FamilyProvenance:
    m = meta.get(FAMILY) or {}
    pset = Path(m["pset"])
    inputs = {
        "pset": {"file": "papers.yaml and its neighbours", "hash": top_files_hash(str(pset))},
        # the Python environment the paper's tests ran in, as resolved on this machine
        "environment": {"hash": json_hash(m.get("environment"))},
    }
    return FamilyProvenance(inputs=inputs, limits={k: m.get(k) for k in ("timeout", "mode")})


def grader_limits(meta: Metadata) -> dict[str, Any]:
    """The limits of the grader sandboxes, read from their shared pool (the one the
    scorer just graded with): the sandbox's memory cap, the test runs it holds at once,
    each run's threads, CPU seconds per thread (the sample's `timeout`) and its
    wall-clock limit. The sandbox's other settings are `grader_session`'s defaults.

    The sample has no sandbox of its own (the paper's tests run in these)."""
    from labcoat.families.researchcodebench import _grading  # its pool, only when scored

    timeout = (meta.get(FAMILY) or {}).get("timeout")
    pool = _grading.shared_pool()
    return {
        "memory_mb": pool.memory_mb,
        "parallel_runs": pool.max_parallel,
        "threads_per_run": pool.threads,
        "cpu_seconds_per_thread": timeout,
        "wall_seconds": timeout * _grading.WALL_FACTOR if timeout is not None else None,
    }


def eval_args(choices: EvalChoices, given: dict[str, Any]) -> dict[str, Any]:
    # the default generate mode has no sandbox; an agent that works in one gets agent mode
    return {"mode": "agent", **given} if choices.agent_in_sandbox else given


SPEC = FamilySpec(
    name=FAMILY,
    title="ResearchCodeBench",
    code=Path(__file__).resolve().parent,
    discover=discover,
    task=researchcodebench,
    task_folder=task_folder,
    report_rank=3,
    provenance=provenance,
    grader_limits=grader_limits,
    preflight=preflight,
    eval_args=eval_args,
    report_sections=("papers_and_failures",),
    sample_unit="snippets",
)

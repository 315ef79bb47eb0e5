"""Intermediate and final scoring of RE-Bench tasks, always in protected sandboxes."""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.tool import Tool, tool
from inspect_ai.util import store

from labcoat._util.progress import run_progress
from labcoat.families._score import NORMALIZED, RAW, mean_scored, research_score, stderr_scored
from labcoat.families.rebench._family import AGENT_HOME, TaskFamilyDir, run_operation
from labcoat.grading import agent_workspace, exclusive_machine, stop_agent_processes

SCORE_LOG = "labcoat:rebench:score_log"


@dataclass(frozen=True)
class SampleTask:
    """What a sample's metadata says about its task (set when the dataset is built)."""

    family: TaskFamilyDir
    task: str
    intermediate_scoring: bool
    has_aggregate: bool
    score_spec: dict[str, Any] | None
    timing_sensitive: bool
    memory_mb: int
    cpus: float | None

    @classmethod
    def of(cls, metadata: dict[str, Any]) -> SampleTask:
        m = metadata["rebench"]
        return cls(
            family=TaskFamilyDir(Path(m["family_dir"])),
            task=m["task"],
            intermediate_scoring=m["intermediate_scoring"],
            has_aggregate=m["has_aggregate"],
            score_spec=m["score"],
            timing_sensitive=m["timing_sensitive"],
            memory_mb=m["memory_mb"],
            cpus=m.get("cpus"),
        )


def normalize(raw: float | None, spec: dict[str, Any] | None) -> float | None:
    """(raw − start) / (reference − start): start = 0, reference = 1, may exceed 1.

    An invalid run (no valid score) counts as the starting solution: 0.
    """
    if spec is None:
        return None
    if raw is None:
        return 0.0
    return (raw - spec["start"]) / (spec["reference"] - spec["start"])


async def _measure(sample: SampleTask) -> tuple[dict[str, Any], str]:
    """Run the family's intermediate_score against the agent's current workspace."""
    async with agent_workspace(AGENT_HOME) as home:
        hold = exclusive_machine() if sample.timing_sensitive else contextlib.nullcontext()
        async with hold:
            run = await run_operation(
                sample.family,
                "intermediate_score",
                sample.task,
                home=home,
                memory_mb=sample.memory_mb,
                cpus=sample.cpus,
            )
    result = run.result if isinstance(run.result, dict) else {"score": run.result}
    return result, run.output


def _valid(score: Any) -> float | None:
    return float(score) if isinstance(score, int | float) and math.isfinite(score) else None


async def record_intermediate_score(sample: SampleTask, final: bool = False) -> dict[str, Any]:
    """Score the workspace now; record the score with time, tokens and cost in the log."""
    result, output = await _measure(sample)
    entry = {
        "score": _valid(result.get("score")),
        "message": result.get("message") or {},
        "details": result.get("details") or {},
        "final": final,
        **run_progress(),
    }
    log: list[dict[str, Any]] = store().get(SCORE_LOG, [])
    log.append(entry)
    store().set(SCORE_LOG, log)
    # the full record (score, output) goes to the transcript, never to the agent
    transcript().info(
        {"intermediate_score": entry, "scorer_output": output[-4000:]}, source="labcoat.score"
    )
    return entry


@tool(name="score")
def score_tool(sample: SampleTask) -> Tool:
    async def execute() -> str:
        """Score your current solution, as the final scoring would, and see the message.

        Scoring runs in a separate sandbox against held-out data; it may take a while.
        """
        entry = await record_intermediate_score(sample)
        return json.dumps(entry["message"]) if entry["message"] else "Scored (no message)."

    return execute


def _final_raw(sample: SampleTask, log: list[dict[str, Any]]) -> float | None:
    valid = [e["score"] for e in log if e["score"] is not None]
    if not valid:
        return None
    if sample.score_spec is None or sample.score_spec["final"] == "last":
        return log[-1]["score"]
    better = max if sample.score_spec["higher_is_better"] else min
    return better(valid)


@scorer(metrics={NORMALIZED: [mean_scored(), stderr_scored()], RAW: [mean_scored()]})
def rebench_scorer():
    """Final score after the agent stops, computed in a fresh protected sandbox."""

    async def score(state: TaskState, target: Target) -> Score:
        sample = SampleTask.of(state.metadata)
        await stop_agent_processes()
        submission = state.output.completion if state.output else ""
        details: dict[str, Any] = {}
        log: list[dict[str, Any]] | None = None
        if sample.intermediate_scoring:
            await record_intermediate_score(sample, final=True)
            log = store().get(SCORE_LOG, [])
            details["score_log"] = log
        if sample.intermediate_scoring and not sample.has_aggregate:
            raw = _final_raw(sample, log or [])
            final = sample.score_spec["final"] if sample.score_spec else "last"
            rule = f"the {final} intermediate score"
        else:  # the family's own aggregate_scores(score_log), or score(submission)
            async with agent_workspace(AGENT_HOME) as home:
                run = await run_operation(
                    sample.family,
                    "score",
                    sample.task,
                    home=home,
                    submission=submission,
                    score_log=log,
                    memory_mb=sample.memory_mb,
                    cpus=sample.cpus,
                )
            raw = _valid(run.result["score"])
            rule = "the family's " + ("aggregate_scores" if log is not None else "score()")
            details["scorer_output"] = run.output[-4000:]
        normalized = normalize(raw, sample.score_spec)
        explanation = f"raw {raw} from {rule}" + (
            "" if raw is not None else " (no valid score: counted as the starting solution)"
        )
        return research_score(
            raw,
            normalized if normalized is not None else math.nan,
            explanation=explanation,
            metadata={**details, "score_spec": sample.score_spec},
        )

    return score

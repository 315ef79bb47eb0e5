"""One sample of a log as rows of the analysis tables (pure: no file access)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from inspect_ai.event import ToolEvent
from inspect_ai.log import EvalSample
from inspect_ai.scorer import Score

from labcoat._run._budget import is_not_started
from labcoat._unavailable import LABEL, label, reason_of
from labcoat._util.store_keys import (
    GPUS_KEY,
    GRADER_GPUS_KEY,
    HANDOFFS_KEY,
    STEPS_KEY,
    STOP_KEY,
)
from labcoat.agents.human import SUMMARY_KEY as HUMAN_KEY
from labcoat.analysis._family import Family, Row, num
from labcoat.families._score import NORMALIZED, RAW, WEIGHT
from labcoat.integrity import run_flags

OK, ERROR, MANUAL = "ok", "error", "needs manual score"
"""Statuses of a sample (and of a run, `_data`): scored; errored; the task returned no
score (a person grades it: out of the means, not an error)."""
NOT_STARTED_STATUS = "not started"
"""The status of a sample a run's budget did not let start: it ran nothing, so it is no
run, no error and no score; its `error` says why. Its log marks it with the budget's
own `labcoat._run._budget.NOT_STARTED` ("not started: budget") in the error message."""
CANNOT_RUN_HERE = LABEL
"""The status of a sample this machine could not run (`labcoat._unavailable`): no run,
no error, no score, as a sample that did not start; its `error` is `cannot run here: …`."""


@dataclass
class LogContext:
    """What every row of one log shares."""

    location: str
    name: str
    eval_id: str
    family: str
    model: str
    agent: str
    variant: str
    label: str
    with_paper: bool | None
    reader: Family

    def run_key(self, task_id: str, epoch: int) -> str:
        return f"{self.eval_id}/{task_id}/{epoch}"

    def ids(self, task_id: str, epoch: int) -> Row:
        return {
            "run": self.run_key(task_id, epoch),
            "family": self.family,
            "task_id": task_id,
            "label": self.label,
            "epoch": epoch,
        }


@dataclass
class SampleRows:
    sample: Row
    subtasks: list[Row] = field(default_factory=list)
    scores: list[Row] = field(default_factory=list)
    steps: list[Row] = field(default_factory=list)
    tool_calls: list[Row] = field(default_factory=list)


def first_score(sample: EvalSample) -> Score | None:
    return next(iter((sample.scores or {}).values()), None)


def _value(score: Score | None) -> tuple[float | None, float | None, float]:
    """(raw, normalized, weight) of a labcoat score; a bare number counts as both."""
    if score is None:
        return None, None, 1.0
    if isinstance(score.value, dict):
        weight = num(score.value.get(WEIGHT))
        return num(score.value.get(RAW)), num(score.value.get(NORMALIZED)), weight or 1.0
    value = num(score.value)
    return value, value, 1.0


def _error_line(sample: EvalSample) -> str | None:
    if sample.error is not None:
        return sample.error.message.strip().splitlines()[0][:300] if sample.error.message else "?"
    if sample.invalidation is not None:
        return "invalidated"
    return None


def stopped_by(sample: EvalSample, store: dict[str, Any]) -> str | None:
    """What ended the run: the research agent's own record (`labcoat:stopped_by`), else
    what Inspect recorded (an error, or the limit that stopped the sample)."""
    stopped = store.get(STOP_KEY)
    if isinstance(stopped, dict) and stopped.get("type"):
        return str(stopped["type"])
    if sample.error is not None:
        return "error"
    if sample.limit is not None:
        return sample.limit.type
    return None


def _started(sample: EvalSample) -> datetime | None:
    try:
        return datetime.fromisoformat(sample.started_at) if sample.started_at else None
    except ValueError:
        return None


def _step_row(ids: Row, step: dict[str, Any]) -> Row:
    figures = ("elapsed_seconds", "working_seconds", "tokens", "cost")
    return {
        **ids,
        "step": step.get("step"),
        "final": bool(step.get("final")),
        "timestamp": num(step.get("timestamp")),
        **{k: num(step.get(k)) for k in figures},
    }


def _tool_calls(sample: EvalSample, started: datetime | None) -> list[Row]:
    rows = []
    for event in sample.events or []:
        if not isinstance(event, ToolEvent):
            continue
        elapsed = (event.timestamp - started).total_seconds() if started else None
        duration = (event.completed - event.timestamp).total_seconds() if event.completed else None
        rows.append(
            {
                "function": event.function,
                "elapsed_seconds": elapsed,
                "working_start": num(event.working_start),
                "duration": duration,
                "error": event.error is not None,
            }
        )
    return rows


def _usage(sample: EvalSample) -> tuple[float | None, float | None]:
    usages = list((sample.model_usage or {}).values())
    tokens = sum(u.total_tokens for u in usages) if usages else None
    costs = [u.total_cost for u in usages if u.total_cost is not None]
    return (float(tokens) if tokens is not None else None), (sum(costs) if costs else None)


def _run_seconds(steps: list[Row], scores: list[Row], tools: list[Row], total: float | None):
    """How long the agent worked: its last step, else its last tool call or score."""
    if steps and steps[-1].get("elapsed_seconds") is not None:
        return steps[-1]["elapsed_seconds"]
    ends = [
        (t["elapsed_seconds"] or 0) + (t["duration"] or 0)
        for t in tools
        if t["elapsed_seconds"] is not None
    ]
    ends += [s["elapsed_seconds"] for s in scores if s["elapsed_seconds"] is not None]
    return max(ends) if ends else total


def _status(
    ok: bool, score: Score | None, not_started: bool = False, cannot_run: bool = False
) -> str:
    if not_started:
        return NOT_STARTED_STATUS
    if cannot_run:
        return CANNOT_RUN_HERE
    if not ok:
        return ERROR
    # the task returned no score: a person must grade it (RE-Bench's manual scoring)
    manual = score is not None and (score.metadata or {}).get("manual_scoring")
    return MANUAL if manual else OK


def _gpu_fields(record: Any, grader_records: Any) -> Row:
    """The GPUs a run held (labcoat:gpus), and those its graders took for themselves (a
    PaperBench reproduction's; labcoat:grader_gpus): the most held at once, GPU-seconds,
    the peak memory and the mean utilization (weighted by GPU-seconds) nvidia-smi saw."""
    held = [r for r in [record, *(grader_records or [])] if isinstance(r, dict) and r]

    def known(key: str) -> list[float]:
        return [v for r in held if (v := num(r.get(key))) is not None]

    seconds, peaks = known("gpu_seconds"), known("peak_memory_mib")
    used = [
        (u, s)
        for r in held
        if (u := num(r.get("mean_utilization_pct"))) is not None
        and (s := num(r.get("gpu_seconds")))
    ]
    return {
        "gpus": max((len(r["ids"]) for r in held if isinstance(r.get("ids"), list)), default=0),
        "gpu_seconds": sum(seconds) if seconds else None,
        "gpu_peak_memory_mib": max(peaks) if peaks else None,
        "gpu_utilization_pct": (
            sum(u * s for u, s in used) / sum(s for _, s in used) if used else None
        ),
    }


def sample_rows(ctx: LogContext, sample: EvalSample) -> SampleRows:
    meta = sample.metadata or {}
    task_id = str(meta.get("task_id", sample.id))
    epoch = int(sample.epoch)
    ids = ctx.ids(task_id, epoch)
    score = first_score(sample)
    error = _error_line(sample)
    ok = error is None and score is not None
    # Inspect records it as an errored sample; labcoat's CLI tables leave it out as well
    not_started = sample.error is not None and is_not_started(sample.error.message)
    cannot_run = None if sample.error is None else reason_of(sample.error.message)
    if cannot_run is not None:
        error = label(cannot_run)  # one line, not the exception's repr
    raw, normalized, weight = _value(score) if ok else (None, None, ctx.reader.weight(sample))
    store = sample.store or {}

    steps = [_step_row(ids, s) for s in store.get(STEPS_KEY) or [] if isinstance(s, dict)]
    points = ctx.reader.score_points(sample, score)
    scores = [{**ids, "index": i, "source": "intermediate", **p} for i, p in enumerate(points)]
    tools = [{**ids, **t} for t in _tool_calls(sample, _started(sample))]
    tokens, cost = _usage(sample)
    last = steps[-1] if steps else {}
    total = num(sample.total_time)
    run_seconds = _run_seconds(steps, scores, tools, total)
    working = last.get("working_seconds")
    working = working if working is not None else num(sample.working_time)
    person = store.get(HUMAN_KEY)
    if isinstance(person, dict):  # a person's run: working time excludes their pauses
        working = num(person.get("working_seconds"))
        run_seconds = working if working is not None else run_seconds
    tokens = last.get("tokens") if last.get("tokens") is not None else tokens
    cost = last.get("cost") if last.get("cost") is not None else cost
    if ok and not any(s["final"] for s in scores):
        # no recorded final: the final score counts from the end of the run
        scores.append(
            {
                **ids,
                "index": len(scores),
                "source": "final",
                "elapsed_seconds": run_seconds,
                "working_seconds": working,
                "tokens": tokens,
                "cost": cost,
                "timestamp": None,
                "raw": raw,
                "normalized": normalized,
                "final": True,
            }
        )

    flags = run_flags(sample)
    row: Row = {
        **ids,
        "log": ctx.location,
        "name": ctx.name,
        "title": meta.get("title"),
        "model": ctx.model,
        "agent": ctx.agent,
        "variant": ctx.variant,
        "with_paper": ctx.with_paper,
        "sample_id": str(sample.id),
        "weight": weight,
        "status": _status(ok, score, not_started, cannot_run is not None),
        "not_started": not_started,
        "cannot_run_here": cannot_run is not None,
        "error": error if error or ok else "no score",
        "flagged": bool(flags),
        "integrity_flags": "; ".join(flags) or None,
        "limit": sample.limit.type if sample.limit is not None else None,
        "stopped_by": stopped_by(sample, store),
        "raw": raw,
        "normalized": normalized,
        "curve_rule": ctx.reader.curve_rule(sample, score),
        "time_limit_minutes": num(meta.get("time_limit_minutes")),
        "started_at": sample.started_at,
        "run_seconds": run_seconds,
        "total_seconds": total,
        "working_seconds": working,
        "tokens": tokens,
        "cost": cost,
        "steps": len(steps),
        "tool_calls": person.get("commands") if isinstance(person, dict) else len(tools),
        "handoffs": len(store.get(HANDOFFS_KEY) or []),
        "imported": False,
        **_gpu_fields(store.get(GPUS_KEY), store.get(GRADER_GPUS_KEY)),
    }
    parts: list[Row] = []
    if ok and score is not None:
        row.update(ctx.reader.run_fields(sample, score))
        parts = [{**ids, "sample_id": str(sample.id), **p} for p in ctx.reader.parts(sample, score)]
    return SampleRows(row, parts, scores, steps, tools)


def missing_row(ctx: LogContext, task_id: str, sample_id: str, epoch: int, why: str) -> Row:
    """A run the log should hold but does not (the eval stopped before it finished)."""
    return {
        **ctx.ids(task_id, epoch),
        "log": ctx.location,
        "name": ctx.name,
        "model": ctx.model,
        "agent": ctx.agent,
        "variant": ctx.variant,
        "with_paper": ctx.with_paper,
        "sample_id": sample_id,
        "weight": 1.0,
        "status": ERROR,
        "not_started": False,
        "cannot_run_here": False,
        "error": why,
    }

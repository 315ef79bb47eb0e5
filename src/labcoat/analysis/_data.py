"""`RunData`: the analysis tables, and how sample rows become one row per run.

A run is one task attempted once: one sample in one epoch for most families; for
ResearchCodeBench, every snippet of one paper in one epoch (the paper is the task).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from labcoat.analysis import _columns as cols
from labcoat.analysis._family import Row
from labcoat.analysis._links import view_link
from labcoat.analysis._provenance import COLUMNS as PROVENANCE
from labcoat.analysis._sample_rows import (
    CANNOT_RUN_HERE,
    ERROR,
    MANUAL,
    NOT_STARTED_STATUS,
    OK,
)
from labcoat.families._score import mean_over_runs

if TYPE_CHECKING:
    from labcoat.analysis._human import HumanRuns
    from labcoat.analysis._sample_rows import SampleRows

PARTIAL = "partial"
_FIRST = (*cols.RUN_IDENTITY, "sample_id", "curve_rule", "time_limit_minutes")
_FIRST_SET = ("error", "limit", "stopped_by", "self_reported")
_SUMS = (
    "gpu_seconds",
    "run_seconds",
    "total_seconds",
    "working_seconds",
    "tokens",
    "cost",
    "steps",
    "tool_calls",
    "handoffs",
)


def frame(rows: list[Row], columns: list[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for column in columns:
        if column not in df:
            df[column] = None
    return df[columns + [c for c in df.columns if c not in columns]]


@dataclass(frozen=True)
class RunData:
    """Everything read from a set of logs, one DataFrame per grain.

    - `logs`: one row per log file (status, superseded retries);
    - `samples`: one row per sample and epoch;
    - `runs`: one row per run (errored runs included, `status` = ok | partial | error);
      runs the run's budget did not let start are not among them (`not_started`);
    - `subtasks`: sub-task results (ResearchGym sub-tasks, ResearchCodeBench snippets,
      PaperBench rubric categories), `kind` says which;
    - `scores`: intermediate scores, plus each run's final score at its end;
    - `steps`: the research agent's steps (time, working time, tokens, cost);
    - `tool_calls`: one row per tool call, with its time into the run;
    - `not_started`: the runs whose samples all were `not started: budget` (Inspect logs
      them as errored samples), with the columns of `runs`, `status` = `not started` and
      `error` the reason. They ran nothing: no run, no error and no score anywhere.
    - `cannot_run_here`: the runs that could not run on this machine (a GPU, a secret,
      an environment it cannot give: `labcoat._unavailable`), as `not_started`, with
      `status` = `cannot run here` and `error` = `cannot run here: <reason>`.
    """

    logs: pd.DataFrame
    samples: pd.DataFrame
    runs: pd.DataFrame
    subtasks: pd.DataFrame
    scores: pd.DataFrame
    steps: pd.DataFrame
    tool_calls: pd.DataFrame
    roots: tuple[str, ...] = ()
    not_started: pd.DataFrame = field(default_factory=lambda: frame([], cols.RUNS))
    cannot_run_here: pd.DataFrame = field(default_factory=lambda: frame([], cols.RUNS))

    def with_humans(self, humans: HumanRuns) -> RunData:
        """These tables plus human runs (label `human` unless the CSV names one)."""
        families = dict(zip(self.runs["task_id"], self.runs["family"], strict=False))

        def joined(mine: pd.DataFrame, theirs: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
            theirs = theirs.assign(family=theirs["task_id"].map(families).fillna(""))
            return frame(mine.to_dict("records") + theirs.to_dict("records"), columns)

        return replace(
            self,
            runs=joined(self.runs, humans.runs, cols.RUNS),
            scores=joined(self.scores, humans.scores, cols.SCORES),
        )


def _shared(values: list[Any]) -> Any:
    """The value a run's samples share; distinct ones joined with ` | ` (a run whose
    snippets were graded by different versions shows it)."""
    distinct = list(dict.fromkeys(v for v in values if v is not None and not _nan(v)))
    if len(distinct) < 2:
        return distinct[0] if distinct else None
    return " | ".join(map(str, distinct))


def _mean(values: list[Any]) -> float | None:
    xs = [float(v) for v in values if v is not None and not _nan(v)]
    return sum(xs) / len(xs) if xs else None


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _scored_value(sample: Row) -> float:
    """A scored sample's normalized value; NaN when its task has no normalized scale."""
    value = sample.get("normalized")
    return math.nan if value is None else float(value)


def aggregate_run(samples: list[Row], view_url: str | None) -> Row:
    """One run from its samples; errored samples count 0 with their weight (the error
    rule of every table, `labcoat.families._score.mean_over_runs`). Samples that did not
    start, or could not run here, are left out, as labcoat's CLI tables leave them out;
    a run none of whose samples ran has `status` = `cannot run here` (when one of them
    could not) or `not started`."""
    statuses = [s.get("status") for s in samples]
    started = [s for s in samples if s.get("status") not in _NOT_RUN]
    if not started:
        return _not_run(samples, view_url)
    row = _aggregate(started, view_url)
    row["sample_not_started"] = statuses.count(NOT_STARTED_STATUS)
    row["sample_cannot_run_here"] = statuses.count(CANNOT_RUN_HERE)
    return row


_NOT_RUN = (NOT_STARTED_STATUS, CANNOT_RUN_HERE)


def _not_run(samples: list[Row], view_url: str | None) -> Row:
    statuses = [s.get("status") for s in samples]
    status = CANNOT_RUN_HERE if CANNOT_RUN_HERE in statuses else NOT_STARTED_STATUS
    # its reason: the error of a sample with that status
    row = _aggregate([s for s in samples if s.get("status") == status], view_url)
    row.update(
        status=status,
        samples=len(samples),
        sample_errors=0,
        sample_not_started=statuses.count(NOT_STARTED_STATUS),
        sample_cannot_run_here=statuses.count(CANNOT_RUN_HERE),
        raw=None,
        normalized=None,
    )
    return row


def _aggregate(samples: list[Row], view_url: str | None) -> Row:
    head = samples[0]
    row: Row = {k: head.get(k) for k in _FIRST}
    for key in _FIRST_SET:
        row[key] = next((s.get(key) for s in samples if s.get(key) is not None), None)
    for key in _SUMS:
        values = [s.get(key) for s in samples if s.get(key) is not None]
        row[key] = sum(values) if values else None
    started = [s["started_at"] for s in samples if s.get("started_at")]
    row["started_at"] = min(started) if started else None
    errors = sum(s["status"] == ERROR for s in samples)
    row["samples"], row["sample_errors"] = len(samples), errors
    row["status"] = OK if errors == 0 else ERROR if errors == len(samples) else PARTIAL
    if row["status"] == OK and any(s["status"] == MANUAL for s in samples):
        row["status"] = MANUAL
    scored = [s for s in samples if s["status"] == OK]
    if row["status"] == ERROR:
        row["raw"] = row["normalized"] = None
    else:
        weights = [1.0 if s.get("weight") is None else float(s["weight"]) for s in samples]
        # errored samples count 0; a sample to be scored by hand counts nothing yet (NaN)
        values = [
            math.nan if s["status"] == MANUAL else _scored_value(s) if s["status"] == OK else None
            for s in samples
        ]
        row["normalized"] = mean_over_runs(values, weights)
        row["raw"] = head.get("raw") if len(samples) == 1 else _mean([s.get("raw") for s in scored])
    for key in ("completion_rate", "improvement", "primary_value"):
        row[key] = _mean([s.get(key) for s in scored])
    row["gpus"] = max((s.get("gpus") or 0 for s in samples), default=0)
    peaks = [s["gpu_peak_memory_mib"] for s in samples if s.get("gpu_peak_memory_mib") is not None]
    row["gpu_peak_memory_mib"] = max(peaks) if peaks else None
    row["gpu_utilization_pct"] = _mean([s.get("gpu_utilization_pct") for s in samples])
    flags = [f for s in samples for f in (s.get("integrity_flags") or "").split("; ") if f]
    row["flagged"] = bool(flags)
    row["integrity_flags"] = "; ".join(dict.fromkeys(flags)) or None
    improved = [s.get("improved") for s in scored if s.get("improved") is not None]
    row["improved"] = all(improved) if improved else None
    for key in PROVENANCE:
        row[key] = _shared([s.get(key) for s in samples])
    single = len(samples) == 1
    row["link"] = view_link(
        str(head["name"]),
        head["sample_id"] if single else None,
        head["epoch"] if single else None,
        view_url,
    )
    return row


def build(
    logs: list[Row],
    samples: list[SampleRows],
    *,
    roots: list[str] | None = None,
    view_url: str | None = None,
) -> RunData:
    by_run: dict[str, list[Row]] = {}
    for s in samples:
        by_run.setdefault(s.sample["run"], []).append(s.sample)
    runs = [aggregate_run(group, view_url) for group in by_run.values()]
    for run, key in zip(runs, by_run, strict=True):
        run["run"] = key
    started = [r for r in runs if r["status"] not in _NOT_RUN]
    return RunData(
        logs=frame(logs, cols.LOGS),
        samples=frame([s.sample for s in samples], cols.SAMPLES),
        runs=frame(started, cols.RUNS),
        subtasks=frame([r for s in samples for r in s.subtasks], cols.SUBTASKS),
        scores=frame([r for s in samples for r in s.scores], cols.SCORES),
        steps=frame([r for s in samples for r in s.steps], cols.STEPS),
        tool_calls=frame([r for s in samples for r in s.tool_calls], cols.TOOL_CALLS),
        roots=tuple(roots or ()),
        not_started=frame([r for r in runs if r["status"] == NOT_STARTED_STATUS], cols.RUNS),
        cannot_run_here=frame([r for r in runs if r["status"] == CANNOT_RUN_HERE], cols.RUNS),
    )

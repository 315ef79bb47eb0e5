"""Per task and model over runs: mean, SE, min, max, rates; and the leaderboard."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from labcoat.analysis._columns import TASK_KEYS
from labcoat.analysis._data import RunData
from labcoat.analysis._groups import ErrorsAs, by_task, run_scores
from labcoat.analysis._stats import finite, mean_se

REFERENCE = 1.0  # normalized 1 is the reference solution (RE-Bench) / SOTA (ResearchGym)
TOLERANCE = 0.01
"""Normalized scores within this of a bar count as at it: timing and float noise move a
do-nothing run to 2e-05 or a reference run to 0.99998, which is neither an improvement
nor a miss. So `improved` means normalized > 0.01 and `≥ reference` normalized ≥ 0.99."""


def _known(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _rate(values: Iterable[object]) -> float:
    """The share of true values among the known ones."""
    known = [bool(v) for v in values if _known(v)]
    return sum(known) / len(known) if known else math.nan


def _mean(values: pd.Series) -> float:
    xs = finite(pd.to_numeric(values, errors="coerce").tolist())
    return sum(xs) / len(xs) if xs else math.nan


def improved_flags(runs: pd.DataFrame) -> list[bool | None]:
    """The family's own `improved` when it has one, else normalized > TOLERANCE (beat the
    start by more than noise)."""
    scores = pd.to_numeric(runs["normalized"], errors="coerce")
    return [
        bool(own) if _known(own) else None if math.isnan(score) else bool(score > TOLERANCE)
        for own, score in zip(runs["improved"], scores, strict=True)
    ]


def task_summary(data: RunData, errors_as: ErrorsAs = "zero") -> pd.DataFrame:
    """One row per (family, task, label).

    `mean`, `se`, `min`, `max` are over runs with errored runs scoring 0 (or left out
    with `errors_as="drop"`); `errors` counts them either way and `mean_scored` is the
    mean of the runs that were scored. `beat_reference_rate` is the share of scored runs
    with normalized >= 1 - TOLERANCE (at the reference, up to noise, or above); and
    `improved_rate` the share that improved on the baseline (the family's own test, else
    normalized > TOLERANCE). `not_started` counts the runs the run's budget did not let
    start (`data.not_started`), `cannot_run_here` those this machine could not run
    (`data.cannot_run_here`): they are in no other figure, and a task none of whose runs
    ran has no row (the leaderboard counts it).
    """
    not_started = _not_started(data, TASK_KEYS)
    cannot_run = _not_started(data, TASK_KEYS, data.cannot_run_here)
    rows = []
    for (family, task_id, label), runs in by_task(data.runs):
        scores = run_scores(runs, errors_as)
        ok = runs[runs["status"] != "error"]
        mean, se = mean_se(scores.tolist())
        xs = finite(scores.tolist())
        scored = pd.to_numeric(ok["normalized"], errors="coerce")
        rows.append(
            {
                "family": family,
                "task_id": task_id,
                "title": runs["title"].dropna().iloc[0] if runs["title"].notna().any() else None,
                "label": label,
                "runs": len(runs),
                "errors": int((runs["status"] == "error").sum()),
                "partial": int((runs["status"] == "partial").sum()),
                "not_started": not_started.get((family, task_id, label), 0),
                "cannot_run_here": cannot_run.get((family, task_id, label), 0),
                "flagged": int(runs["flagged"].eq(True).sum()),
                "mean": mean,
                "se": se,
                "min": min(xs) if xs else math.nan,
                "max": max(xs) if xs else math.nan,
                "mean_scored": _mean(scored),
                "raw_mean": _mean(ok["raw"]),
                "completion_rate": _mean(ok["completion_rate"]),
                "improved_rate": _rate(improved_flags(ok)),
                "beat_reference_rate": _rate(s >= REFERENCE - TOLERANCE for s in scored.dropna()),
                "self_reported": int((ok["self_reported"] == True).sum()),  # noqa: E712
                "mean_hours": _mean(runs["run_seconds"]) / 3600,
                "mean_tokens": _mean(runs["tokens"]),
                "mean_cost": _mean(runs["cost"]),
            }
        )
    return pd.DataFrame(rows, columns=_SUMMARY_COLUMNS)


_SUMMARY_COLUMNS = [
    "family",
    "task_id",
    "title",
    "label",
    "runs",
    "errors",
    "partial",
    "not_started",
    "cannot_run_here",
    "flagged",
    "mean",
    "se",
    "min",
    "max",
    "mean_scored",
    "raw_mean",
    "completion_rate",
    "improved_rate",
    "beat_reference_rate",
    "self_reported",
    "mean_hours",
    "mean_tokens",
    "mean_cost",
]


def leaderboard(
    data: RunData, errors_as: ErrorsAs = "zero", summary: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per (family, label): the mean over tasks of each task's mean score.

    Every task counts equally, and so does the SE: the SE over the task means,
    sd(task means, ddof=1) / √T (`task_mean_se`; tasks, not runs, are the samples of a
    benchmark). It is NaN with a single task. `tasks` and `runs` say what it rests on.
    `not_started` counts the runs the budget did not let start, `cannot_run_here` those
    this machine could not run (a label none of whose runs ran has a row with 0 tasks;
    a task none of whose runs ran is not among its `tasks`). Scores are comparable within
    a family only.
    `summary`: a `task_summary` of the same data, when already computed.
    """
    if summary is None:
        summary = task_summary(data, errors_as)
    not_started = _not_started(data, ["family", "label"])
    cannot_run = _not_started(data, ["family", "label"], data.cannot_run_here)
    rows = []
    for (family, label), group in summary.groupby(["family", "label"], sort=True):
        # one value per task (its mean over runs): the same as task_mean_se of the runs
        mean, se = mean_se(group["mean"].tolist())
        rows.append(
            {
                "family": family,
                "label": label,
                "tasks": len(group),
                "runs": int(group["runs"].sum()),
                "errors": int(group["errors"].sum()),
                "not_started": not_started.pop((family, label), 0),
                "cannot_run_here": cannot_run.pop((family, label), 0),
                "flagged": int(group["flagged"].sum()),
                "mean": mean,
                "se": se,
                "beat_reference_rate": group["beat_reference_rate"].mean(),
                "improved_rate": group["improved_rate"].mean(),
                "mean_hours": group["mean_hours"].mean(),
                "mean_cost": group["mean_cost"].mean(),
            }
        )
    for key in {**not_started, **cannot_run}:  # nothing of theirs ran
        family, label = key
        rows.append({"family": family, "label": label, "tasks": 0, "runs": 0, "errors": 0})
        rows[-1].update(not_started=not_started.get(key, 0), cannot_run_here=cannot_run.get(key, 0))
        rows[-1].update(flagged=0, mean=math.nan, se=math.nan)
    out = pd.DataFrame(
        rows,
        columns=[
            "family",
            "label",
            "tasks",
            "runs",
            "errors",
            "not_started",
            "cannot_run_here",
            "flagged",
            "mean",
            "se",
            "beat_reference_rate",
            "improved_rate",
            "mean_hours",
            "mean_cost",
        ],
    )
    return out.sort_values(["family", "mean"], ascending=[True, False], ignore_index=True)


def _not_started(
    data: RunData, keys: list[str], runs: pd.DataFrame | None = None
) -> dict[tuple[str, ...], int]:
    """How many runs did not start (or, given `runs`, are among them), per `keys` (family
    and label always strings, as `by_task` groups them)."""
    runs = data.not_started if runs is None else runs
    if runs.empty:
        return {}
    keyed = runs.assign(family=runs["family"].fillna(""), label=runs["label"].fillna(""))
    sizes = keyed.groupby(keys, sort=True, dropna=False).size()
    return {tuple(str(k) for k in key): int(n) for key, n in sizes.items()}

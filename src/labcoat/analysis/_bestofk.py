"""Best-of-k: over all runs, and at an equal total time budget (RE-Bench's comparison).

`best_of_k_table`: for k = 1..n, the expected best final score of k runs drawn from
the n recorded ones (the unbiased estimator in `_stats.best_of_k`).

`best_of_k_at_budget`: split a total budget of T hours into k runs of t = T/k hours.
Each run's score at t is read from its score-over-time curve (the best score it had
reached by t, 0 before its first score; see `_curves`), and the best-of-k estimator is
applied to those scores. T defaults to the task's time limit, else its longest run.
This assumes a run given t hours behaves like the first t hours of a longer run, which
is how RE-Bench builds its equal-budget comparison from long runs.
"""

from __future__ import annotations

import math

import pandas as pd

from labcoat.analysis._columns import TASK_KEYS
from labcoat.analysis._curves import run_curves
from labcoat.analysis._data import RunData
from labcoat.analysis._errorbars import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    task_bootstrap_band,
)
from labcoat.analysis._groups import ErrorsAs, by_task, run_scores
from labcoat.analysis._stats import best_of_k, finite


def best_of_k_table(data: RunData, errors_as: ErrorsAs = "zero") -> pd.DataFrame:
    """One row per (family, task, label, k), k = 1..n."""
    rows = []
    for (family, task_id, label), runs in by_task(data.runs):
        scores = finite(run_scores(runs, errors_as).tolist())
        rows += [
            {
                "family": family,
                "task_id": task_id,
                "label": label,
                "k": k,
                "n": len(scores),
                "best_of_k": best_of_k(scores, k),
            }
            for k in range(1, len(scores) + 1)
        ]
    return pd.DataFrame(rows, columns=[*TASK_KEYS, "k", "n", "best_of_k"])


def task_budget_hours(data: RunData, task_id: str) -> float | None:
    """A task's total budget: its time limit, else its longest run (hours)."""
    runs = data.runs[data.runs["task_id"] == task_id]
    limits = finite(pd.to_numeric(runs["time_limit_minutes"], errors="coerce").tolist())
    if limits:
        return max(limits) / 60
    lengths = finite(pd.to_numeric(runs["run_seconds"], errors="coerce").tolist())
    return max(lengths) / 3600 if lengths else None


def best_of_k_at_budget(
    data: RunData,
    total_hours: float | None = None,
    errors_as: ErrorsAs = "zero",
) -> pd.DataFrame:
    """One row per (family, task, label, k): E[best of k runs of T/k hours each]."""
    curves = run_curves(data, "elapsed_seconds")
    rows = []
    for (family, task_id, label), runs in by_task(data.runs):
        budget = total_hours if total_hours is not None else task_budget_hours(data, task_id)
        mine = [curves[r] for r in runs["run"] if r in curves]
        if not budget or not mine:
            continue
        for k in range(1, len(mine) + 1):
            hours = budget / k
            scores = finite([c.at(hours * 3600, errors_as) for c in mine])
            value = best_of_k(scores, k) if len(scores) >= k else math.nan
            rows.append(
                {
                    "family": family,
                    "task_id": task_id,
                    "label": label,
                    "k": k,
                    "hours_per_run": hours,
                    "total_hours": budget,
                    "n": len(scores),
                    "best_of_k": value,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "family",
            "task_id",
            "label",
            "k",
            "hours_per_run",
            "total_hours",
            "n",
            "best_of_k",
        ],
    )


def family_best_of_k(
    table: pd.DataFrame,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per (family, label, k): the mean over tasks of a best-of-k table (from
    `best_of_k_table` or `best_of_k_at_budget`), for the k every one of the label's
    tasks reaches, with a bootstrap band over tasks.

    `low` and `high`: the `level` percentile band of the mean when the label's tasks are
    resampled with replacement (`task_bootstrap_band`: `resamples` draws, fixed `seed`);
    each task's curve is kept whole, so the band is over which tasks the benchmark holds.
    NaN with a single task."""
    rows = []
    for (family, label), g in table.groupby(["family", "label"], sort=True):
        tasks = g["task_id"].nunique()
        per_k = {
            k: by_k.set_index("task_id")["best_of_k"]
            for k, by_k in g.groupby("k", sort=True)
            if len(finite(by_k["best_of_k"].tolist())) == tasks
        }
        if not per_k:
            continue
        ks = list(per_k)
        names = sorted(per_k[ks[0]].index)
        curves = [[float(per_k[k][t]) for k in ks] for t in names]  # one curve per task
        low, high = task_bootstrap_band(curves, resamples, seed, level)
        rows += [
            {
                "family": family,
                "label": label,
                "k": k,
                "tasks": tasks,
                "best_of_k": math.fsum(per_k[k]) / tasks,
                "low": low[i],
                "high": high[i],
            }
            for i, k in enumerate(ks)
        ]
    return pd.DataFrame(rows, columns=["family", "label", "k", "tasks", "best_of_k", "low", "high"])

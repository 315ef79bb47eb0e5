"""Model against model, paired over the tasks both ran (per family)."""

from __future__ import annotations

import itertools

import pandas as pd

from labcoat.analysis._data import RunData
from labcoat.analysis._errorbars import paired_difference
from labcoat.analysis._groups import ErrorsAs
from labcoat.analysis._summary import task_summary

PAIR_COLUMNS = [
    "family",
    "a",
    "b",
    "tasks",
    "mean_a",
    "mean_b",
    "difference",
    "se",
    "ci_low",
    "ci_high",
    "left_out",
]
TASK_COLUMNS = ["family", "a", "b", "task_id", "mean_a", "mean_b", "difference"]


def _pairs(summary: pd.DataFrame) -> list[tuple[str, str, str, dict, dict]]:
    """(family, a, b, a's task means, b's task means) for every two labels of a family;
    `a` is the one with the higher mean over its tasks, so differences read as a's lead."""
    out = []
    for family, fam in summary.groupby("family", sort=True):
        means = {
            str(label): dict(zip(g["task_id"], g["mean"], strict=True))
            for label, g in fam.groupby("label", sort=True)
        }
        order = sorted(means, key=lambda lb: (-pd.Series(means[lb]).mean(), lb))
        for a, b in itertools.combinations(order, 2):
            out.append((str(family), a, b, means[a], means[b]))
    return out


def paired_differences(
    data: RunData,
    errors_as: ErrorsAs = "zero",
    summary: pd.DataFrame | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """One row per family and pair of labels (a, b): a − b paired over shared tasks.

    Per shared task, the difference of the two task means (errored runs as 0 unless
    `errors_as="drop"`); `difference` is their mean, `se` their SE over tasks and
    `ci_low`..`ci_high` the `level` interval with Student's t on tasks − 1 degrees of
    freedom (`paired_difference`). `mean_a` and `mean_b` are over the shared tasks only, so
    difference = mean_a − mean_b. `left_out`: tasks only one of the two ran.
    """
    if summary is None:
        summary = task_summary(data, errors_as)
    rows = []
    for family, a, b, mean_a, mean_b in _pairs(summary):
        d = paired_difference(mean_a, mean_b, level)
        shared = list(d.per_task)
        rows.append(
            {
                "family": family,
                "a": a,
                "b": b,
                "tasks": d.tasks,
                "mean_a": pd.Series([mean_a[t] for t in shared], dtype=float).mean(),
                "mean_b": pd.Series([mean_b[t] for t in shared], dtype=float).mean(),
                "difference": d.difference,
                "se": d.se,
                "ci_low": d.ci_low,
                "ci_high": d.ci_high,
                "left_out": tuple(str(t) for t in d.left_out),
            }
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def paired_task_differences(
    data: RunData, errors_as: ErrorsAs = "zero", summary: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The per-task rows behind `paired_differences`: a's and b's task means and a − b."""
    if summary is None:
        summary = task_summary(data, errors_as)
    rows = [
        {
            "family": family,
            "a": a,
            "b": b,
            "task_id": task,
            "mean_a": mean_a[task],
            "mean_b": mean_b[task],
            "difference": diff,
        }
        for family, a, b, mean_a, mean_b in _pairs(summary)
        for task, diff in paired_difference(mean_a, mean_b).per_task.items()
    ]
    return pd.DataFrame(rows, columns=TASK_COLUMNS)

"""Shared helpers: which runs count, and how errored runs enter a figure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import pandas as pd

from labcoat.analysis._columns import TASK_KEYS
from labcoat.families._score import ERROR_SCORE

ErrorsAs = Literal["zero", "drop"]
"""`zero` (labcoat's rule for every table, `labcoat.families._score.ERROR_SCORE`): an
errored run scores 0, the starting point, as RE-Bench counts an invalid run; `drop`: it
is left out of the figure (an explicit choice for a what-if). Either way the `errors`
column counts it."""


def run_scores(runs: pd.DataFrame, errors_as: ErrorsAs = "zero") -> pd.Series:
    """Each run's normalized score, errored runs as 0 (or NaN when dropped)."""
    if errors_as not in ("zero", "drop"):
        raise ValueError(f"errors_as must be 'zero' or 'drop', got {errors_as!r}")
    scores = pd.to_numeric(runs["normalized"], errors="coerce")
    if errors_as == "zero":
        scores = scores.where(runs["status"] != "error", ERROR_SCORE)
    return scores


def by_task(runs: pd.DataFrame) -> Iterator[tuple[tuple[str, str, str], pd.DataFrame]]:
    """Runs grouped by (family, task, label), in a stable order."""
    if runs.empty:
        return
    keyed = runs.assign(family=runs["family"].fillna(""), label=runs["label"].fillna(""))
    for key, group in keyed.groupby(TASK_KEYS, sort=True, dropna=False):
        yield (str(key[0]), str(key[1]), str(key[2])), group

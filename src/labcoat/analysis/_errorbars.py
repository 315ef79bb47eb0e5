"""Error bars that treat tasks, not runs, as the samples of a benchmark.

Runs of one task share that task's difficulty, so they are not independent draws from the
benchmark: a mean over 7 tasks x 8 runs is not as precise as 56 independent runs would
make it. Following "Adding Error Bars to Evals" (Miller 2024), every error bar here is
clustered by task. Plain numbers in, plain numbers out; the formulas are in
docs/analysis.md#error-bars and are checked by hand in tests/analysis/test_errorbars.py.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from labcoat.analysis._stats import mean_se
from labcoat.analysis._tdist import t_quantile


@dataclass(frozen=True)
class ClusteredMean:
    """A mean with its task-clustered SE, and what it was computed from.

    `se` is NaN with fewer than two tasks: one task says nothing about how much another
    task would differ, so no SE over tasks exists (it is not 0)."""

    mean: float
    se: float
    tasks: int
    runs: int


def _by_task(values: Sequence[float], tasks: Sequence[Hashable]) -> dict[Hashable, list[float]]:
    """Finite values grouped by task, in first-seen order (NaN and None dropped)."""
    if len(values) != len(tasks):
        raise ValueError("values and tasks must have the same length")
    groups: dict[Hashable, list[float]] = {}
    for v, t in zip(values, tasks, strict=True):
        if v is not None and math.isfinite(v):
            groups.setdefault(t, []).append(float(v))
    return groups


def clustered_se(values: Sequence[float], tasks: Sequence[Hashable]) -> ClusteredMean:
    """The mean over all runs (each run weighs the same) with Miller's cluster-robust SE.

    With tasks c = 1..C, run scores s_ci, N runs and m their mean:
    SE² = C/(C−1) · Σ_c (Σ_i (s_ci − m))² / N².
    The C/(C−1) factor is the usual small-sample correction (Stata's, for a mean); with it,
    one run per task gives back the ordinary SE, and equal runs per task give the SE over
    the task means (see `task_mean_se`).
    """
    groups = _by_task(values, tasks)
    n = sum(len(g) for g in groups.values())
    c = len(groups)
    if n == 0:
        return ClusteredMean(math.nan, math.nan, 0, 0)
    m = math.fsum(v for g in groups.values() for v in g) / n
    if c < 2:
        return ClusteredMean(m, math.nan, c, n)
    spread = math.fsum(math.fsum(v - m for v in g) ** 2 for g in groups.values())
    return ClusteredMean(m, math.sqrt(c / (c - 1) * spread) / n, c, n)


def task_mean_se(values: Sequence[float], tasks: Sequence[Hashable]) -> ClusteredMean:
    """The mean of the per-task means (each task weighs the same) and its SE over tasks.

    SE = sd(task means, ddof = 1) / √C. A task mean carries its own run-to-run noise, so
    the spread of the task means holds both the within-task and the between-task variance:
    nothing is left out. This is the leaderboard's definition.
    """
    groups = _by_task(values, tasks)
    means = [math.fsum(g) / len(g) for g in groups.values()]
    mean, se = mean_se(means)
    return ClusteredMean(mean, se, len(means), sum(len(g) for g in groups.values()))


@dataclass(frozen=True)
class PairedDifference:
    """A − B over the tasks both ran: per-task differences, their mean, SE and CI."""

    difference: float
    se: float
    ci_low: float
    ci_high: float
    tasks: int
    per_task: dict[Hashable, float] = field(default_factory=dict)
    left_out: tuple[Hashable, ...] = ()


def paired_difference(
    a: Mapping[Hashable, float], b: Mapping[Hashable, float], level: float = 0.95
) -> PairedDifference:
    """Paired over tasks: `a` and `b` map a task to that model's mean score on it.

    d_c = a_c − b_c on the C tasks both have a finite score for; difference = mean(d),
    SE = sd(d, ddof = 1) / √C, CI = difference ± t_{(1+level)/2, C−1} · SE (Student's t:
    with few tasks the normal 1.96 would be too narrow). SE and CI are NaN below two
    shared tasks. `left_out`: the tasks only one side has, sorted.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")

    def ok(v: float | None) -> bool:
        return v is not None and math.isfinite(v)

    shared = sorted((t for t in a if t in b and ok(a[t]) and ok(b[t])), key=str)
    per_task = {t: float(a[t]) - float(b[t]) for t in shared}
    left_out = tuple(sorted((set(a) | set(b)) - set(shared), key=str))
    mean, se = mean_se(list(per_task.values()))
    if len(shared) < 2:
        return PairedDifference(mean, math.nan, math.nan, math.nan, len(shared), per_task, left_out)
    half = t_quantile((1 + level) / 2, len(shared) - 1) * se
    return PairedDifference(mean, se, mean - half, mean + half, len(shared), per_task, left_out)


BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0


def task_bootstrap_band(
    curves: Sequence[Sequence[float]],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[list[float], list[float]]:
    """(low, high) percentile band of the mean over tasks of per-task curves.

    `curves` holds one curve per task, all of the same length (e.g. best of k for
    k = 1..K). Each resample draws C tasks with replacement and averages their curves;
    low and high are the (1−level)/2 and (1+level)/2 percentiles of those means at every
    point. Seeded (numpy's default_rng(seed)), so a report is the same each time it is
    built. NaN with fewer than two tasks: resampling one task only returns it.
    """
    matrix = np.asarray(curves, dtype=float)
    if matrix.ndim != 2:
        raise ValueError("curves must be one sequence of equal length per task")
    tasks, points = matrix.shape
    if tasks < 2:
        return [math.nan] * points, [math.nan] * points
    picks = np.random.default_rng(seed).integers(0, tasks, size=(resamples, tasks))
    means = matrix[picks].mean(axis=1)  # (resamples, points)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means, [tail, 100 - tail], axis=0)
    return low.tolist(), high.tolist()

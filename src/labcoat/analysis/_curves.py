"""Score over wall time, working time, tokens or cost, from the recorded scores.

A run's score at x is what it would be credited with had it stopped at x: the best
score recorded so far (or the latest, for tasks scored on their last attempt), and 0
(the starting point) before its first score. After a run ends it keeps its final score.
Runs without intermediate scores have one point: their final score at their end.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from labcoat.analysis._columns import TASK_KEYS
from labcoat.analysis._data import RunData
from labcoat.analysis._family import LAST
from labcoat.analysis._groups import ErrorsAs, by_task
from labcoat.analysis._stats import mean_se

Axis = Literal["elapsed_seconds", "working_seconds", "tokens", "cost"]
AXES: dict[Axis, str] = {
    "elapsed_seconds": "wall-clock hours",
    "working_seconds": "working hours",
    "tokens": "tokens",
    "cost": "cost (USD)",
}
# the runs-table column that holds each run's total on an axis
_RUN_TOTAL = {
    "elapsed_seconds": "run_seconds",
    "working_seconds": "working_seconds",
    "tokens": "tokens",
    "cost": "cost",
}


@dataclass(frozen=True)
class Curve:
    """One run's credited score as a step function of one axis."""

    xs: list[float]
    ys: list[float]
    end: float | None
    errored: bool

    def at(self, x: float, errors_as: ErrorsAs = "zero") -> float:
        if self.errored:
            return 0.0 if errors_as == "zero" else math.nan
        i = bisect.bisect_right(self.xs, x)
        return self.ys[i - 1] if i else 0.0


def _num(v: object) -> float | None:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def run_curves(data: RunData, axis: Axis = "elapsed_seconds") -> dict[str, Curve]:
    """Each run's curve on `axis` (runs that never recorded the axis are left out)."""
    if axis not in AXES:
        raise ValueError(f"axis must be one of {', '.join(AXES)}, got {axis!r}")
    points: dict[str, list[tuple[float, float]]] = {}
    for run, x, y in zip(
        data.scores["run"], data.scores[axis], data.scores["normalized"], strict=True
    ):
        xv = _num(x)
        if xv is not None:
            points.setdefault(run, []).append((xv, _num(y) or 0.0))
    curves = {}
    for run, rule, status, total in zip(
        data.runs["run"],
        data.runs["curve_rule"],
        data.runs["status"],
        data.runs[_RUN_TOTAL[axis]],
        strict=True,
    ):
        errored = status == "error"
        pts = sorted(points.get(run, []), key=lambda p: p[0])
        if not pts and not errored:
            continue
        xs, ys, credited = [], [], -math.inf
        for x, y in pts:
            credited = y if rule == LAST else max(credited, y)
            xs.append(x)
            ys.append(credited)
        end = _num(total)
        if xs and (end is None or end < xs[-1]):
            end = xs[-1]  # the final scoring may land just after the recorded end
        curves[run] = Curve(xs, ys, end, errored)
    return curves


def curve_points(data: RunData, axis: Axis = "elapsed_seconds") -> pd.DataFrame:
    """Plot-ready step points per run: from (0, 0) through each score to the run's end."""
    curves = run_curves(data, axis)
    meta = data.runs.set_index("run")[TASK_KEYS]
    rows = []
    for run, c in curves.items():
        if c.errored:
            continue
        family, task_id, label = meta.loc[run]
        pts = [(0.0, 0.0), *zip(c.xs, c.ys, strict=True)]
        if c.end is not None and c.xs and c.end > c.xs[-1]:
            pts.append((c.end, c.ys[-1]))
        rows += [
            {"run": run, "family": family, "task_id": task_id, "label": label, "x": x, "score": y}
            for x, y in pts
        ]
    return pd.DataFrame(rows, columns=["run", *TASK_KEYS, "x", "score"])


def score_at(
    data: RunData, x: float, axis: Axis = "elapsed_seconds", errors_as: ErrorsAs = "zero"
) -> pd.Series:
    """Every run's credited score at `x` on `axis`, indexed by run."""
    return pd.Series({run: c.at(x, errors_as) for run, c in run_curves(data, axis).items()})


def mean_curve(
    data: RunData,
    axis: Axis = "elapsed_seconds",
    max_points: int = 400,
    errors_as: ErrorsAs = "zero",
) -> pd.DataFrame:
    """Per (family, task, label): the mean ± SE over runs of the score at x, from 0 to
    the longest run of the task.

    x runs over every point where one of the runs' scores changes, so the mean is an
    exact step function; past `max_points` such points, an even grid of that many.
    """
    curves = run_curves(data, axis)
    task_top: dict[str, float] = {}
    for run, task_id in zip(data.runs["run"], data.runs["task_id"], strict=True):
        if run in curves:
            c = curves[run]
            end = c.end if c.end is not None else (c.xs[-1] if c.xs else 0.0)
            task_top[task_id] = max(task_top.get(task_id, 0.0), end)
    rows = []
    for (family, task_id, label), runs in by_task(data.runs):
        mine = [curves[r] for r in runs["run"] if r in curves]
        top = task_top.get(task_id, 0.0)
        if not mine or top <= 0:
            continue
        xs = sorted({0.0, top, *(x for c in mine for x in c.xs if 0 <= x <= top)})
        if len(xs) > max_points:
            xs = [top * i / (max_points - 1) for i in range(max_points)]
        for x in xs:
            mean, se = mean_se([c.at(x, errors_as) for c in mine])
            rows.append(
                {
                    "family": family,
                    "task_id": task_id,
                    "label": label,
                    "x": x,
                    "mean": mean,
                    "se": se,
                    "runs": len(mine),
                }
            )
    return pd.DataFrame(rows, columns=[*TASK_KEYS, "x", "mean", "se", "runs"])


def family_curve(
    data: RunData,
    axis: Axis = "elapsed_seconds",
    points: int = 120,
    errors_as: ErrorsAs = "zero",
) -> pd.DataFrame:
    """Per (family, label): the mean over the label's tasks of its mean score at x, on an
    even grid from 0 to the family's longest run (each task weighs the same)."""
    curves = run_curves(data, axis)
    rows = []
    families = data.runs.assign(family=data.runs["family"].fillna(""))
    for family, runs in families.groupby("family", sort=True):
        mine = [curves[r] for r in runs["run"] if r in curves]
        top = max((c.end if c.end is not None else 0.0 for c in mine), default=0.0)
        if top <= 0:
            continue
        for label, by_label in runs.groupby("label", sort=True):
            tasks = [
                [curves[r] for r in task_runs["run"] if r in curves]
                for _, task_runs in by_label.groupby("task_id")
            ]
            tasks = [t for t in tasks if t]
            for i in range(points + 1):
                x = top * i / points
                means = [sum(c.at(x, errors_as) for c in t) / len(t) for t in tasks]
                rows.append(
                    {
                        "family": family,
                        "label": label,
                        "x": x,
                        "mean": sum(means) / len(means),
                        "tasks": len(tasks),
                    }
                )
    return pd.DataFrame(rows, columns=["family", "label", "x", "mean", "tasks"])

"""Charts of the analysis tables, one function per kind of plot (SVG strings)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable

import pandas as pd

from labcoat.analysis import AXES, Axis
from labcoat.analysis._human import HUMAN
from labcoat.report._svg import HUMAN_COLOR, LABEL_PALETTE, Series, bar_chart, line_chart

MAX_FAINT = 200  # individual run lines per chart; beyond this only the means are drawn


def _slot(name: str) -> int:
    """The name's place in LABEL_PALETTE: a hash that is the same in every process."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % len(LABEL_PALETTE)


def stable_colors(names: Iterable[str]) -> dict[str, str]:
    """Each name's colour, a function of the name alone, so that a model has the same
    colour in every report. Only where two names of one report hash to the same colour
    does the later one (by name) take the next free colour, so no two lines look alike."""
    ordered = sorted(set(names))
    slots: dict[str, int] = {}
    for name in ordered:  # first come by name keeps its own slot
        if _slot(name) not in slots.values():
            slots[name] = _slot(name)
    n = len(LABEL_PALETTE)
    for name in ordered:
        if name in slots:
            continue
        start = _slot(name)
        free = [i % n for i in range(start, start + n) if i % n not in slots.values()]
        slots[name] = free[0] if free else start  # more names than colours: share
    return {name: LABEL_PALETTE[slot] for name, slot in slots.items()}


class Colors:
    """One colour per label, fixed by its name (`stable_colors`); humans in black, dashed."""

    def __init__(self, labels: list[str], humans: set[str], tools: list[str] | None = None):
        self.humans = humans
        self._map = stable_colors(lb for lb in labels if lb not in humans)
        self._tools = stable_colors(tools or ())

    def tool(self, name: str) -> str:
        """One colour per tool, the same in every chart."""
        return self._tools.get(name, "#555")

    def __call__(self, label: str) -> str:
        return HUMAN_COLOR if label in self.humans else self._map.get(label, "#555")

    def dashed(self, label: str) -> bool:
        return label in self.humans


def human_labels(runs: pd.DataFrame) -> set[str]:
    return set(runs.loc[runs["agent"] == HUMAN, "label"])


def axis_scale(axis: Axis, top: float) -> tuple[float, str]:
    """(divisor, axis title) that keeps tick labels readable."""
    if axis in ("elapsed_seconds", "working_seconds"):
        kind = "wall-clock" if axis == "elapsed_seconds" else "working"
        if top < 120:
            return 1.0, f"{kind} seconds"
        if top < 2 * 3600:
            return 60.0, f"{kind} minutes"
        return 3600.0, f"{kind} hours"
    return 1.0, AXES[axis]


def score_over(
    points: pd.DataFrame, means: pd.DataFrame, task_id: str, axis: Axis, colors: Colors
) -> str | None:
    """Each run's credited score (thin steps) and the mean over runs (bold, ± SE band)."""
    mine = points[points["task_id"] == task_id]
    avg = means[means["task_id"] == task_id]
    if mine.empty or float(mine["x"].max()) <= 0:
        return None
    div, x_label = axis_scale(axis, float(mine["x"].max()))
    series: list[Series] = []
    runs = list(mine.groupby("run", sort=False))
    for run, g in runs[:MAX_FAINT]:
        label = str(g["label"].iloc[0])
        pts = [(x / div, y) for x, y in zip(g["x"], g["score"], strict=True)]
        series.append(
            Series(label, pts, colors(label), step=True, faint=True, title=f"{label} · {run}")
        )
    for label, g in avg.groupby("label", sort=True):
        pts = [(x / div, y) for x, y in zip(g["x"], g["mean"], strict=True)]
        band = [
            (x / div, m - s, m + s)
            for x, m, s in zip(g["x"], g["mean"], g["se"], strict=True)
            if math.isfinite(s)
        ]
        n = int(g["runs"].iloc[0])
        series.append(
            Series(
                str(label),
                pts,
                colors(str(label)),
                step=True,
                band=band,
                dashed=colors.dashed(str(label)),
                title=f"{label}: mean of {n} runs",
            )
        )
    return line_chart(
        series,
        x_label=x_label,
        y_label="normalized score",
        ref=1.0,
        title=f"{task_id}: score over {x_label}",
    )


MIN_BEST_OF_K_RUNS = 2
"""Runs per task a label needs for a best-of-k line: best of 1 is the mean, one dot."""


def _best_of_k_points(g: pd.DataFrame) -> list[tuple[float, float]]:
    return [
        (float(k), float(v))
        for k, v in zip(g["k"], g["best_of_k"], strict=True)
        if math.isfinite(v)
    ]


def too_few_runs(table: pd.DataFrame) -> list[str]:
    """Labels of a best-of-k table with no line to draw (under MIN_BEST_OF_K_RUNS runs)."""
    return [
        str(label)
        for label, g in table.groupby("label", sort=True)
        if len(_best_of_k_points(g)) < MIN_BEST_OF_K_RUNS
    ]


def best_of_k(table: pd.DataFrame, colors: Colors, title: str, x_label: str) -> str | None:
    """Expected best of k runs against k, one line per label (`table` already filtered);
    a shaded band where the table has `low` and `high` (the bootstrap over tasks).

    Labels with fewer than MIN_BEST_OF_K_RUNS runs per task are left out (`too_few_runs`
    names them); with none left there is no chart."""
    series = []
    for label, g in table.groupby("label", sort=True):
        pts = _best_of_k_points(g)
        if len(pts) < MIN_BEST_OF_K_RUNS:
            continue
        band = (
            [
                (float(k), float(lo), float(hi))
                for k, lo, hi in zip(g["k"], g["low"], g["high"], strict=True)
                if math.isfinite(lo) and math.isfinite(hi)
            ]
            if "low" in g
            else []
        )
        name = str(label)
        series.append(
            Series(name, pts, colors(name), dashed=colors.dashed(name), band=band, title=name)
        )
    if not series:
        return None
    return line_chart(series, x_label=x_label, y_label="expected best score", ref=1.0, title=title)


def budget_label(table: pd.DataFrame) -> str:
    total = float(table["total_hours"].max())
    span = f"{total:.3g} h" if total >= 2 else f"{total * 60:.3g} min"
    return f"k runs of T/k each, T = {span}"


def family_over(curve: pd.DataFrame, colors: Colors, title: str) -> str | None:
    """The mean over tasks of each label's mean score, against wall-clock time."""
    if curve.empty or float(curve["x"].max()) <= 0:
        return None
    div, x_label = axis_scale("elapsed_seconds", float(curve["x"].max()))
    series = []
    for label, g in curve.groupby("label", sort=True):
        name = str(label)
        pts = [(x / div, y) for x, y in zip(g["x"], g["mean"], strict=True)]
        tasks = int(g["tasks"].iloc[0])
        series.append(
            Series(
                name,
                pts,
                colors(name),
                dashed=colors.dashed(name),
                title=f"{name}: mean over {tasks} task(s)",
            )
        )
    return line_chart(
        series, x_label=x_label, y_label="mean normalized score", ref=1.0, title=title
    )


def reliability_bars(rel: pd.DataFrame, colors: Colors) -> str | None:
    """Per label (mean over tasks): the typical run, the best of k, the best run."""
    if rel.empty:
        return None
    agg = rel.groupby("label", sort=True)[["mean", "best_of_k", "best", "half_best_rate"]].mean()
    labels = list(agg.index)
    groups = [
        ("mean run", list(agg["mean"]), None),
        ("best of k", list(agg["best_of_k"]), None),
        ("best run", list(agg["best"]), None),
    ]
    return bar_chart(
        labels,
        groups,
        y_label="normalized score",
        colors=["#8fb3d9", "#3b78b5", "#173f6b"],
        title="capability vs reliability",
    )


def phase_bars(summary: pd.DataFrame, label: str, colors: Colors) -> str | None:
    """Mean tool calls per run in each phase, stacked by tool."""
    mine = summary[summary["label"] == label]
    if mine.empty:
        return None
    phases = list(dict.fromkeys(mine["phase"]))
    tools = sorted(mine["function"].astype(str).unique())  # same order in every chart
    groups = []
    for tool in tools:
        g = mine[mine["function"] == tool].set_index("phase")["mean_calls"]
        groups.append((str(tool), [float(g.get(p, 0.0)) for p in phases], None))
    return bar_chart(
        phases,
        groups,
        y_label="tool calls per run",
        stacked=True,
        title=f"{label}: tool calls by phase",
        colors=[colors.tool(t) for t in tools],
    )


def density_scatter(density: pd.DataFrame, colors: Colors) -> str | None:
    """Action density (tool calls per hour) against the final score, one dot per run."""
    ok = density[
        (density["status"] != "error")
        & (density["tool_calls"] > 0)
        & density["density"].notna()
        & density["normalized"].notna()
    ]
    if ok.empty:
        return None
    series = [
        Series(
            str(label),
            list(zip(g["density"], g["normalized"], strict=True)),
            colors(str(label)),
            markers=True,
            title=str(label),
        )
        for label, g in ok.groupby("label", sort=True)
    ]
    return line_chart(
        series,
        x_label="tool calls per hour",
        y_label="final normalized score",
        ref=1.0,
        title="action density vs score",
    )


def grouped_bars(
    df: pd.DataFrame,
    category: str,
    value: str,
    se: str | None,
    colors: Colors,
    y_label: str,
    title: str,
) -> str | None:
    """One bar per (category, label), with ± SE whiskers."""
    if df.empty:
        return None
    cats = sorted(df[category].astype(str).unique())
    groups = []
    labels = sorted(df["label"].astype(str).unique())
    for label in labels:
        g = df[df["label"] == label].set_index(df[df["label"] == label][category].astype(str))
        values = [float(g[value].get(c, math.nan)) for c in cats]
        errors = [float(g[se].get(c, math.nan)) for c in cats] if se else None
        groups.append((label, values, errors))
    return bar_chart(
        cats, groups, y_label=y_label, title=title, colors=[colors(lb) for lb in labels]
    )


def error_bars(errors: pd.DataFrame) -> str | None:
    """Failure classes as shares of each label's failed snippets (stacked)."""
    if errors.empty:
        return None
    labels = sorted(errors["label"].astype(str).unique())
    kinds = list(errors.groupby("failure")["count"].sum().sort_values(ascending=False).index)
    groups = []
    for kind in kinds:
        g = errors[errors["failure"] == kind].set_index("label")["share"]
        groups.append((str(kind), [float(g.get(lb, 0.0)) for lb in labels], None))
    return bar_chart(
        labels,
        groups,
        y_label="share of failed snippets",
        stacked=True,
        title="ResearchCodeBench failure classes",
    )

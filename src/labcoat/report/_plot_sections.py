"""Plot sections of a family: over all its tasks, then task by task."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import pandas as pd

from labcoat import analysis as an
from labcoat.report import _plots as plots
from labcoat.report._context import Context, family_title
from labcoat.report._html import figure

# sources of score points that trace a run over time (not just its final score)
TIMED = ("intermediate", "human")
BEST_OF_K = (
    "Expected best final score of k runs drawn from the recorded ones (unbiased estimator, "
    "not the max of one sample)."
)
BUDGET = (
    "Equal total time: k runs of T/k hours each, each scored at T/k on its score-over-time "
    "curve. Rising lines favour many short runs; falling lines, one long run."
)

BAND = (
    f"shaded: 95% bootstrap band over tasks ({an.BOOTSTRAP_RESAMPLES} resamples of the "
    f"tasks with replacement, seed {an.BOOTSTRAP_SEED}; none with one task)."
)
OVER_TASKS = " Mean over tasks; " + BAND


@dataclass
class CurveTables:
    """Computed once for the whole report."""

    points: dict[str, pd.DataFrame]
    means: dict[str, pd.DataFrame]
    family: pd.DataFrame
    best_of_k: pd.DataFrame
    budget: pd.DataFrame

    @classmethod
    def of(cls, data: an.RunData) -> CurveTables:
        timed = data.scores[data.scores["source"].isin(TIMED)]
        tasks = set(timed["task_id"])
        runs = data.runs[data.runs["task_id"].isin(tasks)]
        scores = data.scores[data.scores["task_id"].isin(tasks)]
        curved = an.RunData(
            data.logs,
            data.samples,
            runs,
            data.subtasks,
            scores,
            data.steps,
            data.tool_calls,
            data.roots,
        )
        return cls(
            points={axis: an.curve_points(curved, axis) for axis in an.AXES},
            means={axis: an.mean_curve(curved, axis) for axis in an.AXES},
            family=an.family_curve(curved),
            best_of_k=an.best_of_k_table(data),
            budget=an.best_of_k_at_budget(curved),
        )


def family_overview(ctx: Context, family: str, t: CurveTables) -> str:
    """Over all tasks of the family: score over time and best-of-k, mean over tasks."""
    name = family_title(family)
    figs = []
    svg = plots.family_over(
        t.family[t.family["family"] == family],
        ctx.colors,
        f"{name}: score over time, mean over tasks",
    )
    if svg:
        figs.append(
            figure(
                svg,
                "Mean over tasks of each model's mean score by wall-clock time "
                "(each task counts the same).",
            )
        )
    bok = an.family_best_of_k(t.best_of_k[t.best_of_k["family"] == family])
    title = f"{name}: best of k"
    figs.append(_best_of_k_figure(ctx, bok, title, "k (runs per task)", BEST_OF_K + OVER_TASKS))
    budget = t.budget[t.budget["family"] == family]
    if not budget.empty:
        title, x_label = f"{name}: best of k at equal time", plots.budget_label(budget)
        over = an.family_best_of_k(budget)
        figs.append(_best_of_k_figure(ctx, over, title, x_label, BUDGET + OVER_TASKS))
    note = _too_few_note(bok, "every task") if not bok.empty else ""
    if not any(figs):
        return f"<h3>All tasks</h3>{note}" if note else ""
    return f"<h3>All tasks</h3><div class='plots'>{''.join(figs)}</div>{note}"


def _best_of_k_figure(
    ctx: Context, table: pd.DataFrame, title: str, x_label: str, caption: str
) -> str:
    """A best-of-k figure of the labels with enough runs, its caption naming any left
    out; nothing when none has (`_too_few_note` says why, once)."""
    svg = plots.best_of_k(table, ctx.colors, title, x_label)
    if not svg:
        return ""
    short = plots.too_few_runs(table)
    if short:
        caption += f" Not drawn, with a single run: {escape(', '.join(short))}."
    return figure(svg, caption)


def _too_few_note(table: pd.DataFrame, of: str) -> str:
    """One line saying why there is no best-of-k plot, where no label has enough runs."""
    if table.empty or len(plots.too_few_runs(table)) < table["label"].nunique():
        return ""
    return (
        f"<p class='note'>No best-of-k plot: no model or agent has "
        f"{plots.MIN_BEST_OF_K_RUNS} or more runs of {of} (best of one run is its "
        "score, one dot).</p>"
    )


def _task_figures(ctx: Context, family: str, task_id: str, t: CurveTables) -> str:
    """One task's plots: score over wall time and best of k in view, other axes folded."""

    def mine(df: pd.DataFrame) -> pd.DataFrame:
        return df[(df["family"] == family) & (df["task_id"] == task_id)]

    figs: list[str] = []
    more: list[str] = []
    for axis in an.AXES:
        svg = plots.score_over(mine(t.points[axis]), mine(t.means[axis]), task_id, axis, ctx.colors)
        if svg:
            (figs if axis == "elapsed_seconds" else more).append(figure(svg, _over_caption(axis)))
    bok = mine(t.best_of_k)
    figs.append(_best_of_k_figure(ctx, bok, f"{task_id}: best of k", "k (runs)", BEST_OF_K))
    budget = mine(t.budget)
    if not budget.empty:
        title = f"{task_id}: best of k at equal time"
        figs.append(_best_of_k_figure(ctx, budget, title, plots.budget_label(budget), BUDGET))
    figs = [f for f in figs if f]
    note = _too_few_note(bok, "this task")
    if not figs and not more and not note:
        return ""
    folded = (
        "<details><summary>score over working time, tokens and cost</summary>"
        f"<div class='plots'>{''.join(more)}</div></details>"
    )
    head = f"<h4>{escape(task_id)}</h4><div class='plots'>{''.join(figs)}</div>{note}"
    return head + (folded if more else "")


def task_plots(ctx: Context, family: str, t: CurveTables) -> str:
    tasks = sorted(ctx.summary.loc[ctx.summary["family"] == family, "task_id"].unique())
    out = "".join(_task_figures(ctx, family, task_id, t) for task_id in tasks)
    return "<h3>By task</h3>" + out if out else ""


def _over_caption(axis: str) -> str:
    what = {
        "elapsed_seconds": "wall-clock time",
        "working_seconds": "working time",
        "tokens": "tokens used",
        "cost": "money spent",
    }[axis]
    return (
        f"Score credited by {what}: thin steps are single runs (best score so far), the bold "
        "line is the mean over runs with its ± SE band; the dotted line is the reference."
    )

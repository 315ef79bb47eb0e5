"""Humans and agents side by side, RE-Bench style: on every task that has both, the same
axes for both — final score, best of k, score over working time, time and cost."""

from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd

from labcoat.analysis import Axis
from labcoat.analysis._human import HUMAN
from labcoat.families._score import ERROR_SCORE
from labcoat.report import _plots as plots
from labcoat.report._context import Context
from labcoat.report._html import Cell, figure, hours, money, number, table
from labcoat.report._plot_sections import BEST_OF_K, CurveTables

WHERE = {True: "imported (CSV)", False: "labcoat sandbox"}


def _per_label(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (task, label), g in runs.groupby(["task_id", "label"], sort=True):
        scores = pd.to_numeric(g["normalized"], errors="coerce").fillna(ERROR_SCORE)
        column = g.get("imported", pd.Series(False, index=g.index))
        # missing (None, NaN) is not imported; no fillna: it downcasts object columns
        imported = column.map(lambda value: isinstance(value, bool | np.bool_) and bool(value))
        rows.append(
            {
                "task_id": task,
                "label": label,
                "who": HUMAN if (g["agent"] == HUMAN).all() else "agent",
                "where": "mixed" if imported.nunique() > 1 else WHERE[bool(imported.iloc[0])],
                "runs": len(g),
                "mean": scores.mean(),
                "best": scores.max(),
                "hours": pd.to_numeric(g["run_seconds"], errors="coerce").mean() / 3600,
                "cost": pd.to_numeric(g["cost"], errors="coerce").mean(),
            }
        )
    return pd.DataFrame(rows)


def humans_and_agents(ctx: Context, curves: CurveTables) -> str:
    runs = ctx.data.runs
    human = runs["agent"] == HUMAN
    tasks = sorted(set(runs.loc[human, "task_id"]) & set(runs.loc[~human, "task_id"]))
    if not tasks:
        return ""
    summary = _per_label(runs[runs["task_id"].isin(tasks)])
    columns: list[tuple[str, Cell | str]] = [
        ("task", lambda r: escape(str(r["task_id"]))),
        ("who", lambda r: escape(f"{r['label']} ({r['who']})")),
        ("where", lambda r: escape(r["where"])),
        ("runs", "runs"),
        ("mean score", lambda r: number(r["mean"])),
        ("best", lambda r: number(r["best"])),
        ("mean time", lambda r: hours(r["hours"])),
        ("mean cost", lambda r: money(r["cost"])),
    ]
    figs = []
    for task in tasks:
        best = curves.best_of_k[curves.best_of_k["task_id"] == task]
        svg = plots.best_of_k(best, ctx.colors, f"{task}: humans and agents, best of k", "k")
        short = plots.too_few_runs(best)
        left_out = f" Not drawn, with a single run: {escape(', '.join(short))}." if short else ""
        if svg:
            figs.append(figure(svg, BEST_OF_K + " Humans: black, dashed." + left_out))
        axis: Axis = "working_seconds"
        svg = plots.score_over(curves.points[axis], curves.means[axis], task, axis, ctx.colors)
        if svg:
            figs.append(figure(svg, "Score credited by working time (a person's pauses left out)."))
    note = (
        "<p class='note'>Tasks with both human and agent runs. Human runs from "
        "<code>--agent human</code> ran in the same sandbox, limits and grader as the agents; "
        "CSV-imported ones did not. Time is working time; errored runs count as 0.</p>"
    )
    body = table(summary, columns, table_id="humans-table", numeric=("runs",))
    plots_html = f"<div class='plots'>{''.join(figs)}</div>" if figs else ""
    return f'<section id="humans"><h2>Humans and agents</h2>{note}{body}{plots_html}</section>'

"""Model vs model: paired differences over the tasks both ran, with 95% intervals."""

from __future__ import annotations

from html import escape

import pandas as pd

from labcoat import analysis as an
from labcoat.report._card import mix_warning
from labcoat.report._context import Context, family_order, family_title
from labcoat.report._html import Cell, interval, number, table

NOTE = (
    "<p class='note'>Each pair of models (or agents) of a family, compared on the tasks "
    "<i>both</i> ran: per task, A's mean score minus B's; <b>A − B</b> is the mean of "
    "those differences, <b>SE</b> their standard error over tasks (sd / √tasks, paired: "
    "a task's difficulty cancels out), and <b>95% CI</b> uses Student's t with tasks − 1 "
    "degrees of freedom. A and B are the means over the shared tasks only, so they can "
    "differ from the leaderboard's. A is the model with the higher leaderboard mean. "
    "With one shared task there is no SE or interval (—). Tasks only one of the two ran "
    "are listed as left out.</p>"
)


def _ci(row: pd.Series) -> str:
    if row["tasks"] < 2:
        return '<span title="one shared task: no spread over tasks to measure">—</span>'
    return interval(row["ci_low"], row["ci_high"])


def _left_out(row: pd.Series) -> str:
    tasks = list(row["left_out"])
    return escape(", ".join(tasks)) if tasks else "none"


def model_comparison(ctx: Context) -> str:
    """The section; empty when no family has two labels."""
    pairs = an.paired_differences(ctx.data, summary=ctx.summary)
    if pairs.empty:
        return ""
    # families in the report's order; within one, the pairs in leaderboard order
    pairs = pairs.assign(_order=pairs["family"].map(family_order)).sort_values(
        "_order", kind="stable"
    )
    columns: list[tuple[str, Cell | str]] = [
        ("family", lambda r: escape(family_title(r["family"]))),
        ("A", lambda r: escape(str(r["a"]))),
        ("B", lambda r: escape(str(r["b"]))),
        ("shared tasks", "tasks"),
        ("A (shared)", "mean_a"),
        ("B (shared)", "mean_b"),
        ("A − B", "difference"),
        ("SE", "se"),
        ("95% CI", _ci),
        ("left out", _left_out),
    ]
    numeric = ("shared tasks", "A (shared)", "B (shared)", "A − B", "SE")
    body = mix_warning(ctx.data.runs) + table(
        pairs, columns, table_id="paired-table", numeric=numeric
    )
    per_task = an.paired_task_differences(ctx.data, summary=ctx.summary)
    detail = table(
        per_task,
        [
            ("family", lambda r: escape(family_title(r["family"]))),
            ("A", lambda r: escape(str(r["a"]))),
            ("B", lambda r: escape(str(r["b"]))),
            ("task", lambda r: escape(str(r["task_id"]))),
            ("A mean", "mean_a"),
            ("B mean", "mean_b"),
            ("A − B", lambda r: number(r["difference"])),
        ],
        numeric=("A mean", "B mean", "A − B"),
    )
    folded = f"<details><summary>per-task differences</summary>{detail}</details>"
    return f'<section id="paired"><h2>Model vs model</h2>{NOTE}{body}{folded}</section>'

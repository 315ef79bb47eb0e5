"""The report's tables: leaderboard, tasks, reliability, cost, runs and logs."""

from __future__ import annotations

import math
import re
from html import escape
from typing import Any

import pandas as pd

from labcoat import analysis as an
from labcoat._run._results import error_reason
from labcoat.report import _plots as plots
from labcoat.report._card import mix_warning
from labcoat.report._context import (
    Context,
    anchor,
    bad_count,
    family_order,
    family_title,
    run_links,
)
from labcoat.report._html import (
    Cell,
    count,
    figure,
    headline,
    hours,
    link,
    money,
    number,
    pct,
    pm,
    table,
)

RATES_NOTE = (
    f"<b>≥ reference</b>: share of scored runs at normalized ≥ {1 - an.TOLERANCE:g}; "
    f"<b>improved</b>: the family's own verdict, else normalized > {an.TOLERANCE:g} "
    f"(a tolerance of {an.TOLERANCE:g} for timing and float noise)."
)

SE_NOTE = (
    "<b>± SE</b> is the standard error over tasks, sd(task means) / √tasks: tasks, not "
    "runs, are the benchmark's samples, so many runs of few tasks do not make a figure "
    "precise (Miller 2024, <i>Adding Error Bars to Evals</i>). With one task there is no "
    "such SE (—)."
)


def leaderboard(ctx: Context) -> str:
    board = an.leaderboard(ctx.data, summary=ctx.summary)
    board = board.assign(_order=board["family"].map(family_order)).sort_values(
        ["_order", "mean"], ascending=[True, False]
    )
    columns: list[tuple[str, Cell | str]] = [
        ("family", lambda r: escape(family_title(r["family"]))),
        ("model / agent", lambda r: link(f"#{anchor('family', r['family'])}", str(r["label"]))),
        (
            "mean score ± SE over tasks",
            lambda r: headline(r["mean"], r["se"], r["tasks"], r["runs"]),
        ),
        ("errors", lambda r: bad_count(r["errors"])),
        *_apart_columns(board),
        ("flagged", lambda r: bad_count(r["flagged"])),
        ("≥ reference", lambda r: pct(r["beat_reference_rate"])),
        ("improved", lambda r: pct(r["improved_rate"])),
        ("mean time", lambda r: hours(r["mean_hours"])),
        ("mean cost", lambda r: money(r["mean_cost"])),
    ]
    note = (
        "<p class='note'>Mean over each family's tasks of the per-task mean normalized score "
        "(0 = starting point, 1 = reference), every task weighing the same. "
        + SE_NOTE
        + " Errored runs count as 0 and are counted in "
        "<b>errors</b>; runs with integrity flags keep their score and are counted in "
        "<b>flagged</b> (see <a href='#integrity'>Integrity</a>). Scores compare within a "
        "family only. " + RATES_NOTE + _apart_notes(board) + "</p>"
    )
    body = mix_warning(ctx.data.runs) + table(board, columns, table_id="leaderboard-table")
    # the table before its note: the first screen shows the figures themselves
    return f'<section id="leaderboard"><h2>Leaderboard</h2>{body}{note}</section>'


NOT_STARTED_NOTE = (
    " Runs the run's budget did not let start (<code>not started: budget</code>) ran "
    "nothing: they are counted in <b>not started</b> only, neither runs nor errors, and "
    "listed with the reason under <a href='#runs'>Runs</a>."
)


CANNOT_RUN_NOTE = (
    " Runs this machine could not start (a GPU, a secret, an environment it cannot give: "
    "<code>cannot run here: …</code>) are no runs of the task: they are counted in "
    "<b>cannot run here</b> only, in no mean, and listed with the reason under "
    "<a href='#runs'>Runs</a>."
)


# counts kept apart from runs and errors: (the rows' column, its header, the note on why)
COUNTED_APART = (
    ("not_started", "not started", NOT_STARTED_NOTE),
    ("cannot_run_here", "cannot run here", CANNOT_RUN_NOTE),
)


def _any_counted(rows: pd.DataFrame, key: str) -> bool:
    return bool((pd.to_numeric(rows[key], errors="coerce") > 0).any())


def _apart_columns(rows: pd.DataFrame) -> list[tuple[str, Any]]:
    """The `not started` and `cannot run here` columns, each where any run is so."""
    return [
        (header, lambda r, key=key: count(r[key]))
        for key, header, _ in COUNTED_APART
        if _any_counted(rows, key)
    ]


def _apart_notes(rows: pd.DataFrame) -> str:
    return "".join(note for key, _, note in COUNTED_APART if _any_counted(rows, key))


def _cannot_run_tasks(ctx: Context, family: str) -> str:
    """The family's tasks none of whose runs could start here (no row above), each
    with who tried and why."""
    runs = ctx.data.cannot_run_here
    runs = runs[(runs["family"] == family) & ~runs["task_id"].isin(ctx.summary["task_id"])]
    items = []
    for task, group in runs.groupby("task_id", sort=True):
        labels = ", ".join(map(str, group["label"].dropna().unique()))
        why = _text(group["error"].dropna().iloc[0]) if group["error"].notna().any() else ""
        items.append(f"<li>{escape(str(task))} ({escape(labels)}): {escape(why)}</li>")
    if not items:
        return ""
    return "<p class='note'>No run could start here:</p><ul>" + "".join(items) + "</ul>"


def _family_runs(ctx: Context, family: str) -> pd.DataFrame:
    return ctx.data.runs[ctx.data.runs["family"] == family]


def task_table(ctx: Context, family: str) -> str:
    rows = ctx.summary[ctx.summary["family"] == family]
    columns: list[tuple[str, Cell | str]] = [
        ("task", lambda r: escape(str(r["task_id"]))),
        ("model / agent", lambda r: escape(str(r["label"]))),
        ("runs", "runs"),
        ("errors", lambda r: bad_count(r["errors"])),
        *_apart_columns(rows),
        ("flagged", lambda r: bad_count(r["flagged"])),
        ("mean ± SE over runs", lambda r: pm(r["mean"], r["se"])),
        ("min", "min"),
        ("max", "max"),
        ("completion", lambda r: pct(r["completion_rate"])),
        ("improved", lambda r: pct(r["improved_rate"])),
        ("≥ reference", lambda r: pct(r["beat_reference_rate"])),
        ("time", lambda r: hours(r["mean_hours"])),
        ("cost", lambda r: money(r["mean_cost"])),
        ("runs in inspect view", lambda r: run_links(ctx, r)),
    ]
    return (
        "<h3>Tasks</h3>"
        + mix_warning(_family_runs(ctx, family))
        + table(rows, columns, table_id=anchor("tasks", family), numeric=("runs", "min", "max"))
        + f"<p class='note'>{RATES_NOTE}{_apart_notes(rows)}</p>"
        + _cannot_run_tasks(ctx, family)
    )


def reliability(ctx: Context, family: str) -> str:
    rel = an.reliability(ctx.data)
    rel = rel[rel["family"] == family]
    if rel.empty:
        return ""
    columns: list[tuple[str, Cell | str]] = [
        ("task", "task_id"),
        ("model / agent", "label"),
        ("runs", "runs"),
        ("mean", "mean"),
        ("best of k", lambda r: f"{number(r['best_of_k'])} (k={r['k']})"),
        ("best", "best"),
        ("best − mean", "gap"),
        ("mean / best", "mean_over_best"),
        ("runs ≥ ½ best", lambda r: pct(r["half_best_rate"])),
        ("runs ≤ 0", lambda r: pct(r["zero_rate"])),
    ]
    bars = plots.reliability_bars(rel, ctx.colors)
    caption = (
        "Bars per model: the expected score of one run (mean), of the best of k runs, and of "
        "the best run, averaged over tasks. A tall last bar over a short first one is the "
        "capability–reliability gap."
    )
    fig = figure(bars, caption) if bars else ""
    warning = mix_warning(_family_runs(ctx, family))
    return "<h3>Capability and reliability</h3>" + warning + table(rel, columns) + fig


def costs(ctx: Context, human_hourly: float | None) -> str:
    cost = an.cost_comparison(ctx.data, human_hourly)
    if cost.empty or (cost["mean_cost"].isna().all() and cost["mean_hours"].isna().all()):
        return ""
    columns: list[tuple[str, Cell | str]] = [
        ("family", lambda r: escape(family_title(r["family"]))),
        ("task", "task_id"),
        ("model / agent", "label"),
        ("runs", "runs"),
        ("mean score", "mean_score"),
        ("time per run", lambda r: hours(r["mean_hours"])),
        ("cost per run", lambda r: money(r["mean_cost"])),
        ("GPU time per run", lambda r: hours(r["mean_gpu_hours"])),
        ("cost per hour", lambda r: money(r["cost_per_hour"])),
        ("score per $", "score_per_dollar"),
    ]
    note = (
        "<p class='note'>Agent cost is what the model calls cost (from the run's steps or "
        "model usage); human cost comes from the baseline CSV, or hours × the hourly rate "
        "given to <code>labcoat report --human-hourly-usd</code>. GPU time counts every GPU "
        "a run held, for as long as it held it.</p>"
    )
    body = mix_warning(ctx.data.runs) + table(cost, columns)
    return f'<section id="cost"><h2>Cost</h2>{note}{body}</section>'


def runs_table(ctx: Context) -> str:
    # the runs that did not start, or could not here, are listed too: the reason in `error`
    runs = ctx.data.runs
    waiting = pd.DataFrame(
        ctx.data.not_started.to_dict("records") + ctx.data.cannot_run_here.to_dict("records"),
        columns=ctx.data.not_started.columns,
    )
    if not waiting.empty:  # records, not concat: its all-empty columns keep their dtypes
        runs = pd.DataFrame(
            runs.to_dict("records") + waiting.to_dict("records"), columns=runs.columns
        )
    runs = runs.sort_values(["family", "task_id", "label", "epoch"], key=_sort_key)
    columns: list[tuple[str, Cell | str]] = [
        ("family", lambda r: escape(family_title(r["family"]))),
        ("task", "task_id"),
        ("model / agent", "label"),
        ("run", lambda r: count(r["epoch"])),
        ("status", "status"),
        ("score", "normalized"),
        ("raw", "raw"),
        ("time", lambda r: hours(_hours(r["run_seconds"]))),
        ("tokens", lambda r: count(r["tokens"])),
        ("cost", lambda r: money(r["cost"])),
        ("GPU time", lambda r: hours(_hours(r["gpu_seconds"]))),
        ("tool calls", lambda r: count(r["tool_calls"])),
        ("stopped by", lambda r: escape(stop_label(r["stopped_by"]))),
        ("error", lambda r: escape(_error(r["error"]))),
        ("integrity", lambda r: _flag_cell(r)),
        ("inspect view", lambda r: link(r["link"], "open") if isinstance(r["link"], str) else ""),
    ]
    body = table(
        runs,
        columns,
        table_id="runs-table",
        filter_box=True,
        row_class=lambda r: (
            str(r["status"]).replace(" ", "-") + (" flagged" if r["flagged"] is True else "")
        ),
        numeric=("score", "raw"),
    )
    note = (
        "<p class='note'>Every run, errored ones included (red: no score, counted as 0; "
        "amber: some of its samples errored; ⚑: flagged for integrity, its score kept; "
        "grey: not started, or cannot run here, the reason in <b>error</b>, in no figure). "
        "<b>open</b> shows the run in <code>inspect view</code>.</p>"
    )
    return f'<section id="runs"><h2>Runs</h2>{note}{body}</section>'


STOP_LABELS = {
    "submitted": "submitted",
    "time": "time limit",
    "working": "working-time limit",
    "token": "token limit",
    "cost": "cost limit",
    "message": "message limit",
    "turn": "turn limit",
    "context_overflow": "context overflow",
    "refusals": "refusals",
    "error": "error",
    "cancelled": "cancelled",
    "operator": "operator",
    "finished": "finished",
    "submitted_or_finished": "submitted or finished",  # older logs: the two were one
}


def stop_label(value: object) -> str:
    """What ended a run, in words (`stopped_by` of the runs table)."""
    text = _text(value)
    return STOP_LABELS.get(text, text.replace("_", " "))


def _view_cell(row: pd.Series) -> str:
    return link(row["link"], "open") if isinstance(row["link"], str) else ""


def _flag_cell(row: pd.Series) -> str:
    if row["flagged"] is not True:
        return ""
    return f'<span class="bad">⚑</span> {escape(_text(row["integrity_flags"]))}'


def integrity(ctx: Context) -> str:
    """Every flagged run with its flags: what a grader or `labcoat inspect` found."""
    runs = ctx.data.runs
    flagged = runs[runs["flagged"].eq(True)]
    inspected = "labcoat inspect" in " ".join(
        ctx.data.logs.get("inspected", pd.Series()).astype(str)
    )
    if flagged.empty:
        what = "by <code>labcoat inspect</code> or a grader" if inspected else "by a grader"
        body = f"<p>No run was flagged {what}.</p>"
    else:
        columns: list[tuple[str, Cell | str]] = [
            ("family", lambda r: escape(family_title(r["family"]))),
            ("task", "task_id"),
            ("model / agent", "label"),
            ("run", lambda r: count(r["epoch"])),
            ("score", "normalized"),
            ("flags", lambda r: escape(_text(r["integrity_flags"]))),
            (
                "inspect view",
                lambda r: link(r["link"], "open") if isinstance(r["link"], str) else "",
            ),
        ]
        body = table(flagged, columns, table_id="integrity-table", numeric=("score",))
    note = (
        "<p class='note'>Integrity flags come from the graders (score metadata "
        "<code>integrity_flags</code>) and from <code>labcoat inspect LOGDIR</code>, which "
        "reads each run's transcript, workspace history and scoring record and writes its "
        "findings, with evidence, into the log (a score edit that <code>inspect view</code> "
        "shows). A flag asks for a person's review; the score is kept.</p>"
    )
    return f'<section id="integrity"><h2>Integrity</h2>{note}{body}</section>'


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


_REPR_START = re.compile(r"^(?:[a-z_][\w]*\.)*[A-Z]\w*\((['\"])")  # `mod.ClassName('`


def _error(value: object) -> str:
    """An error's message, not the repr Inspect records (`LabcoatError('...')`)."""
    text = _text(value)
    if not text:
        return ""
    reason = error_reason(text)
    cut = _REPR_START.match(reason)  # a repr cut short (the runs table keeps 300 characters)
    return reason[cut.end() :] if cut else reason


def _hours(seconds: object) -> float:
    try:
        return float(seconds) / 3600  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _sort_key(col: pd.Series) -> pd.Series:
    return pd.to_numeric(col, errors="coerce") if col.name == "epoch" else col.astype(str)


def logs_table(ctx: Context) -> str:
    columns: list[tuple[str, Cell | str]] = [
        ("log", "name"),
        ("status", "status"),
        ("family", "family"),
        ("model / agent", "label"),
        ("samples", "samples"),
        ("superseded by", lambda r: escape(_text(r["superseded_by"]))),
        ("error", lambda r: escape(_error(r["error"]))),
    ]
    body = table(
        ctx.data.logs,
        columns,
        row_class=lambda r: "" if r["status"] == "success" else "error",
    )
    note = (
        "<p class='note'>A log superseded by a newer attempt of the same eval-set task is "
        "not counted (Inspect seeds each retry from the attempt before).</p>"
    )
    return f'<section id="logs"><h2>Logs</h2>{note}{body}</section>'

"""Result tables printed at the end of eval and validate."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labcoat._run._results import TaskResult
from labcoat._run._validate import Verdict
from labcoat.families._score import ERROR_RULE


def _fmt(value: float | None, se: float | None = None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" + (f" ± {se:.3f}" if se is not None else "")


def print_results(results: list[TaskResult], title: str) -> None:
    table = Table(title=title, caption=f"normalized: mean over all runs; {ERROR_RULE}")
    columns = (
        "task",
        "family",
        "agent",
        "runs",
        "errors",
        "flagged",
        "raw (scored)",
        "normalized",
        "note",
    )
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in ("runs", "errors", "flagged") else "left",
            overflow="fold",  # ids must stay whole: users copy them into --task
        )
    for r in results:
        table.add_row(
            r.task_id,
            r.family,
            r.agent,
            str(r.runs),
            str(r.errors),
            f"[red]{len(r.flagged)}[/red]" if r.flagged else "0",
            _fmt(r.raw_mean),
            _fmt(r.normalized_mean, r.normalized_se),
            _note(r),
        )
    Console().print(table)


def flag_note(result: TaskResult) -> str:
    """`FLAGGED: <first flag>` for a task with flagged runs, else ''."""
    if not result.flagged:
        return ""
    first = next(iter(result.flagged.values()))[0]
    more = len(result.flagged) - 1
    return f"FLAGGED: {first}" + (f" (+{more} more run(s))" if more else "")


def _note(result: TaskResult) -> str:
    if result.problem:
        return f"cannot be loaded: {result.problem}"
    if result.unavailable:
        return f"unavailable: {result.unavailable}"
    return escape("; ".join(filter(None, [flag_note(result), *result.error_reasons[:2]])))


def _flag_mark(result: TaskResult | None) -> str:
    return f" [red]⚑{len(result.flagged)}[/red]" if result is not None and result.flagged else ""


def print_verdicts(verdicts: list[Verdict]) -> None:
    table = Table(
        title="labcoat validate: oracle ≈ 1, noop ≈ 0",
        caption=f"means over all runs; {ERROR_RULE}; ⚑ flagged runs",
    )
    for column in ("task", "family", "oracle", "noop", "rule", "result"):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        t = v.entry.thresholds
        rule = f"≥ {t.oracle_min} / ≤ {t.noop_max}" + (f" ({t.reason})" if t.reason else "")
        oracle = _fmt(v.oracle.normalized_mean if v.oracle else None) + _flag_mark(v.oracle)
        noop = _fmt(v.noop.normalized_mean if v.noop else None) + _flag_mark(v.noop)
        if v.unavailable:
            result = f"[yellow]unavailable[/yellow]: {escape(v.unavailable)}"
        elif v.passed:
            result = "[green]pass[/green]"
        else:
            result = "[red]FAIL[/red]: " + escape("; ".join(v.problems))
        table.add_row(v.entry.id, v.entry.family, oracle, noop, rule, result)
    Console().print(table)

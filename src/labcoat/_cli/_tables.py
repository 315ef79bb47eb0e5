"""Result tables printed at the end of eval and validate."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labcoat._run._results import TaskResult
from labcoat._run._validate import Verdict


def _fmt(value: float | None, se: float | None = None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" + (f" ± {se:.3f}" if se is not None else "")


def print_results(results: list[TaskResult], title: str) -> None:
    table = Table(title=title)
    for column in ("task", "family", "agent", "runs", "errors", "raw", "normalized", "note"):
        table.add_column(
            column,
            justify="right" if column in ("runs", "errors") else "left",
            overflow="fold",  # ids must stay whole: users copy them into --task
        )
    for r in results:
        table.add_row(
            r.task_id,
            r.family,
            r.agent,
            str(r.runs),
            str(r.errors),
            _fmt(r.raw_mean),
            _fmt(r.normalized_mean, r.normalized_se),
            escape(_note(r)),
        )
    Console().print(table)


def _note(result: TaskResult) -> str:
    if result.problem:
        return f"cannot be loaded: {result.problem}"
    if result.unavailable:
        return f"unavailable: {result.unavailable}"
    notes = list(result.error_reasons[:2])
    if result.manual:
        notes.insert(0, f"needs manual score ({result.manual} of {result.runs})")
    if result.integrity_flags:
        notes.append(
            f"integrity flags in {len(result.integrity_flags)} run(s): {result.integrity_flags[0]}"
        )
    return "; ".join(notes)


def print_verdicts(verdicts: list[Verdict]) -> None:
    table = Table(title="labcoat validate: oracle ≈ 1, noop ≈ 0")
    for column in ("task", "family", "oracle", "noop", "rule", "result"):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        t = v.entry.thresholds
        rule = f"≥ {t.oracle_min} / ≤ {t.noop_max}" + (f" ({t.reason})" if t.reason else "")
        oracle = _fmt(v.oracle.normalized_mean if v.oracle else None)
        noop = _fmt(v.noop.normalized_mean if v.noop else None)
        if v.unavailable:
            result = f"[yellow]unavailable[/yellow]: {escape(v.unavailable)}"
        elif v.passed:
            result = "[green]pass[/green]"
        else:
            result = "[red]FAIL[/red]: " + escape("; ".join(v.problems))
        table.add_row(v.entry.id, v.entry.family, oracle, noop, rule, result)
    Console().print(table)

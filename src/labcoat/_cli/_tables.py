"""Result tables printed at the end of eval and validate."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from labcoat._cli._output import print_table, whole_table_console
from labcoat._run._budget import NOT_STARTED
from labcoat._run._results import TaskResult
from labcoat._run._validate import Verdict
from labcoat._unavailable import LABEL, RULE, label
from labcoat._util.inspect_names import NO_MODEL
from labcoat.families._score import ERROR_RULE, ERROR_SCORE_RULE


def _fmt(value: float | None, se: float | None = None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" + (f" ± {se:.3f}" if se is not None else "")


def print_results(results: list[TaskResult], title: str) -> None:
    # markup: the table writes its own and escapes every outside text (the title too)
    caption = f"normalized: mean over runs; {ERROR_RULE}; {RULE}"
    if any(r.samples > r.runs for r in results):  # a paper's run is all its snippets
        caption = f"a run: one attempt at the task (all of a paper's snippets); {caption}"
    table = Table(title=escape(title), caption=caption)
    columns = (
        "task",
        "family",
        "model",
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
            escape(r.task_id),
            r.family,
            escape(r.model if r.model and r.model != NO_MODEL else "—"),
            escape(f"{r.agent} [{r.variant}]" if r.variant else r.agent),
            _runs_cell(r),
            str(r.errors),
            f"[red]{len(r.flagged)}[/red]" if r.flagged else "0",
            _fmt(r.raw_mean),
            _fmt(r.normalized_mean, r.normalized_se),
            escape(_note(r)),  # reasons hold paths in brackets: not markup
        )
    print_table(table, markup=True)
    print_subtasks(results)
    cannot = [r for r in results if r.unavailable]
    if cannot:  # plain text: reasons hold brackets
        ran = "nothing ran on this machine: " if not any(r.runs for r in results) else ""
        click.echo(f"{ran}{len(cannot)} task(s) {LABEL} (see the note column)")


def _runs_cell(result: TaskResult) -> str:
    """`2`, or `1 (10 snippets)` where a run holds several samples (the report's runs)."""
    if result.samples > result.runs:
        return f"{result.runs} ({result.samples} {result.sample_unit})"
    return str(result.runs)


def _metric_values(result: TaskResult, subtask: str) -> str:
    """`acc 88.5, aaa 91.2`: the mean of each of the sub-task's metrics over the runs."""
    prefix = f"raw/{subtask}"
    parts = []
    for key in result.components:
        if key == prefix or key.startswith(prefix + "."):
            name = key[len(prefix) + 1 :] or "value"
            parts.append(f"{name} {_fmt(result.component_mean(key))}")
    return ", ".join(parts)


def print_subtasks(results: list[TaskResult]) -> None:
    """Tasks with sub-tasks (ResearchGym): the paper's three figures (completion,
    normalized, beats the baseline), then each sub-task that is primary or complete in
    some run, with its metrics' values (all of them are in --json and the logs)."""
    with_subtasks = [r for r in results if r.subtasks]
    if not with_subtasks:
        return
    summary = Table(title="sub-tasks")
    for column in ("task", "agent", "completion", "normalized", "beats baseline", "sub-task"):
        summary.add_column(column, overflow="fold")
    summary.add_column("values", overflow="fold")
    for r in with_subtasks:
        summary.add_row(
            escape(r.task_id),
            escape(r.agent),
            _fmt(r.component_mean("completion_rate")),
            _fmt(r.normalized_mean),
            _fmt(r.component_mean("improved")),
            f"{len(r.subtasks)} declared, {len(r.primary)} primary",
            "primary " + _fmt(r.component_mean("primary")),
        )
        for sub in r.subtasks:
            done = r.component_mean(f"complete/{sub}")
            if sub not in r.primary and not done:
                continue
            summary.add_row(
                "",
                "",
                _fmt(done),
                "",
                "",
                escape(sub) + (" (primary)" if sub in r.primary else ""),
                escape(_metric_values(r, sub)),
            )
    print_table(summary, markup=True)


def flag_note(result: TaskResult) -> str:
    """`FLAGGED: <first flag>` for a task with flagged runs, else ''."""
    if not result.flagged:
        return ""
    first = next(iter(result.flagged.values()))[0]
    more = len(result.flagged) - 1
    return f"FLAGGED: {first}" + (f" (+{more} more run(s))" if more else "")


def _note(result: TaskResult) -> str:
    """Why a task's runs did not simply score (plain text: the table escapes it)."""
    if result.problem:
        return f"cannot be loaded: {result.problem}"
    if result.unavailable:
        return label(result.unavailable)
    notes = [flag_note(result), *result.error_reasons[:2]]
    if result.cannot_run_here:  # some runs ran here, others could not
        notes.insert(0, f"{result.cannot_run_here} run(s) {label(result.cannot_run_reasons[0])}")
    if result.sample_errors and result.samples > result.runs:
        notes.insert(
            0,
            f"{result.sample_errors} of {result.samples} {result.sample_unit} errored "
            "(count as failed)",
        )
    if result.not_started:
        notes.insert(0, f"{result.not_started} {NOT_STARTED}")
    if result.manual:
        notes.insert(0, f"needs manual score ({result.manual} of {result.samples})")
    return "; ".join(filter(None, notes))


def _flag_mark(result: TaskResult | None) -> str:
    return f" [red]⚑{len(result.flagged)}[/red]" if result is not None and result.flagged else ""


def print_verdicts(verdicts: list[Verdict]) -> None:
    table = Table(
        title="labcoat validate: oracle ≈ 1, noop ≈ 0",
        caption=f"means over runs; {ERROR_SCORE_RULE} (a FAIL names them); {RULE}; ⚑ flagged runs",
    )
    for column in (
        "task",
        "family",
        "environment",
        "oracle",
        "noop",
        "weak tests",
        "rule",
        "result",
    ):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        t = v.entry.thresholds
        oracle_rule = f"≥ {t.oracle_min}" if v.entry.has_oracle else "—"
        rule = f"{oracle_rule} / ≤ {t.noop_max}" + (f" ({t.reason})" if t.reason else "")
        oracle = escape(v.note or _fmt(v.oracle.normalized_mean if v.oracle else None))
        oracle += _flag_mark(v.oracle)
        noop = _fmt(v.noop.normalized_mean if v.noop else None)
        if v.noop and v.noop.normalized_mean is None and v.noop.raw_mean is not None:
            noop = f"{_fmt(v.noop.raw_mean)} (raw)"
        noop += _flag_mark(v.noop)
        if v.unavailable:
            result = f"[yellow]{LABEL}[/yellow]: {escape(v.unavailable)}"
        elif v.manual:
            result = "[yellow]needs manual score[/yellow] (a person grades it: not validated)"
        elif v.passed:
            result = "[green]pass[/green]"
        else:
            result = "[red]FAIL[/red]: " + escape("; ".join(v.problems))
        variant = next((r.variant for r in (v.oracle, v.noop) if r and r.variant), "")
        family = f"{v.entry.family} [{variant}]" if variant else v.entry.family
        weak = str(len(v.noop.weak_tests)) if v.noop and v.noop.weak_tests else "—"
        if v.noop and v.noop.weak_tests and not t.weak_tests_fail:
            weak += " (listed)"
        table.add_row(
            escape(v.entry.id),
            escape(family),
            v.environment,
            oracle,
            noop,
            weak,
            escape(rule),
            result,
        )
    console = whole_table_console(table, markup=True)
    console.print(table)
    # tasks with sub-tasks: the paper's figures of the oracle's and the noop's runs
    print_subtasks([r for v in verdicts for r in (v.oracle, v.noop) if r is not None])
    notes: dict[str, list[str]] = {}
    for v in verdicts:
        for note in v.environment_notes:
            notes.setdefault(note, []).append(v.entry.id)
    noted = {v.entry.id for v in verdicts if v.environment_notes}
    if notes:
        console.print("environment notes (changes made to install here):")
        for note, tasks in notes.items():
            where = (
                "every task graded" if set(tasks) == noted and len(noted) > 1 else ", ".join(tasks)
            )
            console.print(f"  - {escape(note)} {escape(f'[{where}]')}", soft_wrap=True)
    weak_tests = [(v.entry.id, v.noop.weak_tests) for v in verdicts if v.noop and v.noop.weak_tests]
    if weak_tests:
        console.print("weak tests (pass with nothing done):")
        for task, samples in weak_tests:
            console.print(f"  - {escape(task)}: {escape(', '.join(samples))}", soft_wrap=True)

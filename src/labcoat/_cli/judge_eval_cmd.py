"""`labcoat judge-eval PATH --judge ...`: how well a PaperBench judge agrees with people."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table

from labcoat._cli.rubric_cmd import SHORT_NAMES
from labcoat._errors import LabcoatError
from labcoat._util.sync import run_sync
from labcoat.families.paperbench import (
    JUDGES,
    TASK_CATEGORIES,
    CheckJudge,
    Confusion,
    Judge,
    JudgeEvalCase,
    JudgeEvalItem,
    JudgeEvalReport,
    JudgeInput,
    MemoryCache,
    judge_eval,
    make_judge,
    sandbox_command_runner,
)
from labcoat.families.paperbench._judge_eval_data import load_judge_eval_data


@click.command("judge-eval")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--judge", "judge_name", type=click.Choice(JUDGES), required=True)
@click.option(
    "--papers",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of paper folders (paper.md, addendum); default: papers/ beside PATH.",
)
@click.option("--model", metavar="MODEL", help="The llm judge's model (an Inspect model name).")
@click.option("--no-cache", is_flag=True, help="llm: grade afresh instead of reusing answers.")
@click.option("--seed", type=int, default=0, show_default=True, help="random: the seed.")
@click.option(
    "--score",
    type=click.FloatRange(0, 1),
    default=1.0,
    show_default=True,
    help="dummy: the score (0 to 1).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def command(
    path: Path,
    judge_name: str,
    papers: Path | None,
    model: str | None,
    no_cache: bool,
    seed: int,
    score: float,
    as_json: bool,
) -> None:
    """Grade the submissions behind PATH's human-graded trees and compare, leaf by leaf.

    PATH holds `<paper id>/expected_result.json` (or `<paper id>/<n>/expected_result.json`
    with `submission/` beside it, as upstream ships them). Reports accuracy, precision, recall,
    F1 and macro F1 overall and per category; a leaf the judge failed to grade counts as wrong
    and is also counted apart; and model calls and tokens per leaf.
    """
    if judge_name == "llm" and not model:
        raise LabcoatError("--judge llm needs --model (e.g. openai/o3-mini)")
    data = load_judge_eval_data(path, papers)
    options: dict[str, Any] = {
        "dummy": {"score": score},
        "random": {"seed": seed},
        "llm": {"model": model, **({"cache": MemoryCache()} if no_cache else {})},
    }.get(judge_name, {})
    report = run_sync(_evaluate, judge_name, options, data.items, data.case_names)
    report = replace(report, notes=data.notes)
    if as_json:
        click.echo(json.dumps({**report.to_json(), "notes": report.notes}, indent=2))
    else:
        _print(report, path, len(data.items))


@asynccontextmanager
async def _judge_for(
    name: str, options: dict[str, Any], item: JudgeEvalItem
) -> AsyncIterator[Judge]:
    if name != "check":
        yield make_judge(name, **options)
        return
    # command checks run the submission's code: in grader sandboxes, never on this machine
    root = Path(getattr(item.submission, "root", "."))
    async with sandbox_command_runner({"submission": root, "executed": root}) as runner:
        yield CheckJudge(runner=runner)


async def _evaluate(
    name: str, options: dict[str, Any], items: list[JudgeEvalItem], names: list[str]
) -> JudgeEvalReport:
    cases = []
    for item, case_name in zip(items, names, strict=True):
        async with _judge_for(name, options, item) as judge:
            result = await judge.judge(
                JudgeInput(
                    item.paper,
                    item.expected.rubric(),
                    item.submission,
                    item.executed,
                    item.reproduction,
                )
            )
        cases.append(JudgeEvalCase(case_name, result.tree, item.expected, result.usage))
    return judge_eval(cases, judge=name)


def _row(name: str, c: Confusion) -> list[str]:
    return [
        name,
        str(c.n),
        str(c.positives),
        str(c.failed),
        f"{c.accuracy:.3f}",
        f"{c.precision:.3f}",
        f"{c.recall:.3f}",
        f"{c.f1:.3f}",
        f"{c.macro_f1:.3f}",
    ]


def _print(report: JudgeEvalReport, path: Path, cases: int) -> None:
    console = Console()
    table = Table(
        title=f"JudgeEval: the {report.judge} judge on {cases} human-graded tree(s) in {path}",
        caption="met: leaves people graded as met; failed: leaves the judge could not grade "
        "(counted as wrong); dev / exec / results: Code Development / Code Execution / "
        "Result Analysis",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("scope", overflow="fold")
    for column in ("leaves", "met", "failed", "acc.", "prec.", "recall", "F1", "macro F1"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_row(*_row("overall", report.overall), style="bold")
    short = dict(zip(TASK_CATEGORIES, SHORT_NAMES, strict=True))
    order = {c: i for i, c in enumerate(TASK_CATEGORIES)}
    for category, c in sorted(report.by_category.items(), key=lambda kv: order.get(kv[0], 99)):
        table.add_row(*_row(short.get(category, category), c))
    if len(report.by_paper) > 1:
        table.add_section()
        for paper, c in report.by_paper.items():
            table.add_row(*_row(paper, c))
    console.print(table)
    u = report.usage
    console.print(
        f"model calls per leaf: {report.calls_per_leaf:.3f}   tokens per leaf: "
        f"{report.tokens_per_leaf:,.0f} (input {u.input_tokens:,}, output {u.output_tokens:,})   "
        f"cache hits: {u.cache_hits}"
    )
    console.print(
        f"judge failures: {report.overall.failed} of {report.overall.n} leaves"
        + (f"; skipped (no human grade): {report.skipped}" if report.skipped else "")
    )
    for note in report.notes:
        console.print(f"note: {note}")
    with contextlib.suppress(Exception):
        console.file.flush()

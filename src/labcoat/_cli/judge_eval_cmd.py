"""`labcoat judge-eval PATH --judge ...`: how well a PaperBench judge agrees with people."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.table import Table

from labcoat._cli._output import whole_table_console
from labcoat._cli.rubric_cmd import SHORT_NAMES
from labcoat._errors import LabcoatError
from labcoat._util.sync import run_sync
from labcoat.families.paperbench import (
    JUDGES,
    TASK_CATEGORIES,
    CheckJudge,
    Confusion,
    Judge,
    JudgeEvalItem,
    JudgeEvalReport,
    MemoryCache,
    judge_eval,
    make_judge,
    sandbox_command_runner,
)
from labcoat.families.paperbench._judge_eval import judge_case
from labcoat.families.paperbench._judge_eval_data import JudgeEvalSource, load_judge_eval_data


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
@click.option(
    "--code-dev",
    is_flag=True,
    help="Grade and compare only the Code Development leaves (upstream's code_only).",
)
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
    code_dev: bool,
    seed: int,
    score: float,
    as_json: bool,
) -> None:
    """Grade the submissions behind PATH's human-graded trees and compare, leaf by leaf.

    PATH holds upstream's `<paper>/<attempt>/grading/expected_result.json` with
    `<attempt>/submission.tar` (unpacked to a temporary folder while graded), or
    `<paper>/expected_result.json`. Reports upstream's JudgeEval figures (accuracy, precision,
    recall and F1 per class, macro averages; leaves the judge failed to grade left out)
    overall, per category and per attempt, the same with failures counted as wrong, and model
    calls and tokens per leaf.
    """
    if judge_name == "llm" and not model:
        raise LabcoatError("--judge llm needs --model (e.g. openai/o3-mini)")
    data = load_judge_eval_data(path, papers)
    if judge_name in ("llm", "check") and data.missing_submissions:
        raise LabcoatError(
            f"the {judge_name} judge reads the submissions, and these cases have neither "
            f"submission.tar nor submission/: {', '.join(data.missing_submissions)} "
            "(upstream fetches rice's with paperbench/judge/judge_eval/download_data.py)"
        )
    if judge_name == "check":
        unchecked = sorted({c.paper_id for c in data.cases if c.paper.sidecar_path is None})
        if unchecked:
            raise LabcoatError(
                f"the check judge needs each paper's labcoat.yaml of checks; none for: "
                f"{', '.join(unchecked)}"
            )
    by_judge: dict[str, dict[str, Any]] = {
        "dummy": {"score": score},
        # one stream over every case, in order, as upstream's process-wide generator
        "random": {"seed": seed, "rng": random.Random(seed)},
        "llm": {"model": model, **({"cache": MemoryCache()} if no_cache else {})},
    }
    options = by_judge.get(judge_name, {})
    report = run_sync(_evaluate, judge_name, options, data.cases, code_dev)
    report = replace(report, notes=data.notes)
    if as_json:
        click.echo(
            json.dumps({**report.to_json(), "code_dev": code_dev, "notes": report.notes}, indent=2)
        )
    else:
        _print(report, path, len(data.cases), code_dev)


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
    name: str, options: dict[str, Any], sources: list[JudgeEvalSource], code_dev: bool
) -> JudgeEvalReport:
    cases = []
    for source in sources:
        with source.opened() as item:  # a tarred submission exists only while it is graded
            async with _judge_for(name, options, item) as judge:
                cases.append(await judge_case(judge, item, code_dev_only=code_dev))
    return judge_eval(cases, judge=name)


def _row(name: str, c: Confusion) -> list[str]:
    return [
        name,
        str(c.n),
        str(c.positives),
        str(c.failed),
        f"{c.accuracy:.3f}",
        f"{c.met.f1:.3f}",
        f"{c.not_met.f1:.3f}",
        f"{c.macro_precision:.3f}",
        f"{c.macro_recall:.3f}",
        f"{c.macro_f1:.3f}",
    ]


def _print(report: JudgeEvalReport, path: Path, cases: int, code_dev: bool) -> None:
    variant = " (Code-Dev: Code Development leaves only)" if code_dev else ""
    table = Table(
        title=f"JudgeEval: the {report.judge} judge on {cases} human-graded attempt(s) in "
        f"{path}{variant}",
        caption="met: leaves people graded as met; failed: leaves the judge could not grade "
        "(left out, as upstream does); F1 1 / F1 0: F1 of 'met' / 'not met'; macro: mean "
        "over the classes; dev / exec / results: Code Development / Code Execution / "
        "Result Analysis",
        box=box.SIMPLE_HEAD,
    )
    longest = max((len(name) for name in report.by_case), default=0)
    table.add_column("scope", overflow="fold", min_width=max(12, longest))
    columns = ("leaves", "met", "failed", "acc.", "F1 1", "F1 0", "macro P", "macro R", "macro F1")
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    table.add_row(*_row("overall", report.overall), style="bold")
    short = dict(zip(TASK_CATEGORIES, SHORT_NAMES, strict=True))
    order = {c: i for i, c in enumerate(TASK_CATEGORIES)}
    for category, c in sorted(report.by_category.items(), key=lambda kv: order.get(kv[0], 99)):
        table.add_row(*_row(short.get(category, category), c))
    if len(report.by_case) > 1:
        table.add_section()
        for case, c in report.by_case.items():
            table.add_row(*_row(case, c))
    console = whole_table_console(table)
    console.print(table)
    strict = report.overall.strict()
    console.print(
        f"judge failures: {report.overall.failed} of "
        f"{report.overall.n + report.overall.failed} leaves; counted as wrong: accuracy "
        f"{strict.accuracy:.3f}, macro F1 {strict.macro_f1:.3f}"
        + (f"; skipped (no human grade): {report.skipped}" if report.skipped else "")
    )
    u = report.usage
    console.print(
        f"model calls per leaf: {report.calls_per_leaf:.3f}   tokens per leaf: "
        f"{report.tokens_per_leaf:,.0f} (input {u.input_tokens:,}, output {u.output_tokens:,})   "
        f"cache hits: {u.cache_hits}"
    )
    for note in report.notes:
        console.print(f"note: {note}")
    with contextlib.suppress(Exception):
        console.file.flush()

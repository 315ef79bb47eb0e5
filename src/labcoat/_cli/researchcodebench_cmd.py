"""`labcoat researchcodebench aggregate FILE`: scaled pass@1 and pass rate per model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from labcoat._cli._output import print_table
from labcoat.families.researchcodebench import published_scores, summarize_by_model
from labcoat.families.researchcodebench._logs import load_results


@click.group("researchcodebench")
def command() -> None:
    """ResearchCodeBench tools."""


def _pct(value: float | None, std: float | None = None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}" + (f" ± {std:.2f}" if std else "")


def _warn(message: str) -> None:
    click.echo(f"labcoat: warning: skipped {message}", err=True)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


@command.command("aggregate")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print {MODEL: figures} as JSON.")
@click.option("--papers", is_flag=True, help="Also print the figures of each paper.")
def aggregate(file: Path, as_json: bool, papers: bool) -> None:
    """Per-model scaled pass@1 and pass rate (percent) from per-snippet results.

    FILE is upstream's outputs/<run>/overall_stats.json, or labcoat's logs of a
    researchcodebench run (an .eval file or a log folder). Figures are the mean over
    completions (epochs), ± the population standard deviation.
    """
    records, unscored, stats = load_results(file, warn=_warn)
    figures = summarize_by_model(records)
    order = sorted(figures, key=lambda m: -(figures[m]["scaled_pass_at_1"] or 0.0))
    if as_json:
        out = {
            model: {
                "scaled_pass_at_1": _round(figures[model]["scaled_pass_at_1"]),
                "pass_rate": _round(figures[model]["pass_rate"]),
                "snippets": figures[model]["snippets"],
            }
            for model in order
        }
        click.echo(json.dumps(out, indent=2))
        return
    published = published_scores(stats) if stats is not None else {}
    _print_models(file, figures, order, published)
    if papers:
        _print_papers(figures, order)
    if unscored:
        click.echo(f"{unscored} sample(s) had no score (errors) and are left out")


def _print_models(
    file: Path,
    figures: dict[str, dict[str, Any]],
    order: list[str],
    published: dict[str, dict[str, float | None]],
) -> None:
    table = Table(title=f"ResearchCodeBench: {file}")
    columns = ["model", "scaled pass@1", "pass rate", "snippets", "lines", "completions"]
    if published:
        columns.append("published")
    for column in columns:
        table.add_column(column, justify="left" if column == "model" else "right")
    for model in order:
        f = figures[model]
        row = [
            model,
            _pct(f["scaled_pass_at_1"], f["scaled_pass_at_1_std"]),
            _pct(f["pass_rate"], f["pass_rate_std"]),
            str(f["snippets"]),
            str(f["lines"]),
            str(f["completions"]),
        ]
        if published:
            row.append(_pct(published.get(model, {}).get("scaled_pass_at_1")))
        table.add_row(*row)
    print_table(table)


def _print_papers(figures: dict[str, dict[str, Any]], order: list[str]) -> None:
    table = Table(title="per paper: scaled pass@1 (pass rate)")
    table.add_column("paper")
    for model in order:
        table.add_column(model, justify="right")
    paper_ids = sorted({p for model in order for p in figures[model]["papers"]})
    for paper in paper_ids:
        cells = []
        for model in order:
            f = figures[model]["papers"].get(paper)
            cells.append(f"{_pct(f['scaled_pass_at_1'])} ({_pct(f['pass_rate'])})" if f else "—")
        table.add_row(paper, *cells)
    print_table(table)

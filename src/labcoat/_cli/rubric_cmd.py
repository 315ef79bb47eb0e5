"""`labcoat rubric stats PATH [--code-only] [--json]`: what PaperBench rubrics hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from labcoat._cli._output import print_table
from labcoat._errors import LabcoatError
from labcoat.families.paperbench import (
    TASK_CATEGORIES,
    RubricNode,
    RubricStats,
    code_only,
    find_paper_dirs,
    load_paper,
    load_sidecar,
    load_tree,
    rubric_stats,
)
from labcoat.suites import BUNDLED, resolve_target

# Column headers for the leaf categories, short enough for an 80-column terminal.
SHORT_NAMES = ("dev", "exec", "results")


@click.group("rubric")
def command() -> None:
    """Inspect PaperBench rubric trees (rubric.json)."""


@command.command("stats")
@click.argument("path")
@click.option("--code-only", is_flag=True, help="Count only Code Development leaves (Code-Dev).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON: totals and a per-paper breakdown."
)
def stats(path: str, code_only: bool, as_json: bool) -> None:
    """Leaves by category and node counts for PATH.

    PATH is a bundled suite (`mini`), a paper folder, a folder of papers (or a data folder
    holding `papers/`), or one rubric file (`rubric.json`, or a graded tree such as
    `expected_result.json`).
    """
    found = _rubric_path(path)
    rows = [_paper_row(name, rubric, code_only, sidecar) for name, rubric, sidecar in _load(found)]
    total = RubricStats.combine([s for _, s, _ in rows])
    if as_json:
        click.echo(json.dumps(_to_json(rows, total), indent=2))
        return
    _print_table(path, rows, total, code_only)


def _rubric_path(given: str) -> Path:
    """A suite name as every other command takes it (`mini`), a folder, or one file."""
    path = Path(given).expanduser()
    if given not in BUNDLED and path.is_file():
        return path
    folder = resolve_target(given)  # else one line, with a "did you mean"
    nested = folder / "paperbench"  # a suite holds each family in a folder of its name
    return nested if nested.is_dir() else folder


def _load(path: Path) -> list[tuple[str, RubricNode, Any]]:
    """(name, rubric, sidecar or None) for each rubric under `path`."""
    if path.is_file():
        return [(path.parent.name or path.name, load_tree(path), None)]
    dirs = find_paper_dirs(path)
    if not dirs:
        raise LabcoatError(f"{path}: no PaperBench paper folders (config.yaml + rubric.json) here")
    out = []
    for d in dirs:
        paper = load_paper(d)
        sidecar = load_sidecar(paper.sidecar_path, paper.rubric) if paper.sidecar_path else None
        out.append((paper.id, paper.rubric, sidecar))
    return out


def _paper_row(
    name: str, rubric: RubricNode, only_code: bool, sidecar: Any
) -> tuple[str, RubricStats, int | None]:
    tree = code_only(rubric) if only_code else rubric
    checked = sidecar.checked_leaves(tree) if sidecar is not None and tree is not None else None
    return name, rubric_stats(tree), checked


def _to_json(rows: list[tuple[str, RubricStats, int | None]], total: RubricStats) -> dict[str, Any]:
    per_paper = {}
    for name, s, checked in rows:
        entry = s.to_json()
        if checked is not None:
            entry["checked_leaves"] = checked
        per_paper[name] = entry
    return {
        "papers": len(rows),
        "leaves": total.leaves,
        "leaves_by_category": total.leaves_by_category,
        "leaves_by_finegrained_category": total.leaves_by_finegrained,
        "nodes": total.nodes,
        "per_paper": per_paper,
    }


def _print_table(
    path: str, rows: list[tuple[str, RubricStats, int | None]], total: RubricStats, only: bool
) -> None:
    title = f"{len(rows)} rubric(s) in {path}" + (
        " (Code-Dev: Code Development leaves)" if only else ""
    )
    caption = "leaves by category: " + ", ".join(
        f"{short} = {full}" for short, full in zip(SHORT_NAMES, TASK_CATEGORIES, strict=True)
    )
    table = Table(title=title, caption=caption)
    table.add_column("paper", no_wrap=True)
    for col in ("leaves", *SHORT_NAMES, "nodes", "depth"):
        table.add_column(col, justify="right")
    show_checked = any(c is not None for _, _, c in rows)
    if show_checked:
        table.add_column("checked", justify="right")

    def cells(s: RubricStats) -> list[str]:
        by_cat = [str(s.leaves_by_category.get(c, 0)) for c in TASK_CATEGORIES]
        return [str(s.leaves), *by_cat, str(s.nodes), str(s.depth)]

    for name, s, checked in rows:
        extra = [("-" if checked is None else str(checked))] if show_checked else []
        table.add_row(name, *cells(s), *extra)
    if len(rows) > 1:
        extra = [""] if show_checked else []
        table.add_row("total", *cells(total), *extra, style="bold")
    print_table(table)

"""Sections a family's report may add (its spec's `report_sections` names them): rubric
categories (PaperBench's), papers with failures and the paper ablation
(ResearchCodeBench's), sub-tasks (ResearchGym's)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from labcoat import analysis as an
from labcoat._errors import LabcoatError
from labcoat.families import family_spec, is_family
from labcoat.report import _plots as plots
from labcoat.report._context import Context, bad_count
from labcoat.report._html import figure, interval, number, pct, pm, table


def rubric_categories(ctx: Context) -> str:
    papers = an.paperbench_papers(ctx.data)
    cats = an.paperbench_categories(ctx.data)
    out = [
        "<h3>Replication score by paper</h3>",
        table(
            papers,
            [
                ("paper", "task_id"),
                ("model / agent", "label"),
                ("seeds", "runs"),
                ("errors", lambda r: bad_count(r["errors"])),
                ("score ± SE", lambda r: pm(r["mean"], r["se"])),
            ],
        ),
    ]
    if cats.empty:
        return "".join(out)
    overall = cats[cats["paper"] == "all"]
    svg = plots.grouped_bars(
        overall,
        "category",
        "mean",
        "se",
        ctx.colors,
        "score",
        "PaperBench score by rubric category",
    )
    out.append("<h3>Score by rubric category</h3>")
    if svg:
        out.append(
            figure(
                svg,
                "Share of each category's rubric weight met, mean over runs of all papers ± "
                "SE clustered by paper (none with one paper).",
            )
        )
    out.append(_category_pivot(cats))
    return "".join(out)


def _category_pivot(cats: pd.DataFrame) -> str:
    """One row per (paper, label), one column per category: mean ± SE (over a paper's
    runs; clustered by paper on the `all` rows)."""
    categories = sorted(cats["category"].unique())
    rows = []
    for (paper, label), g in cats.groupby(["paper", "label"], sort=True):
        by = g.set_index("category")
        row = {
            "paper": paper,
            "label": label,
            "papers": int(g["papers"].max()),
            "runs": int(g["runs"].max()),
        }
        row.update({c: pm(by["mean"].get(c), by["se"].get(c)) for c in categories})
        rows.append(row)
    df = pd.DataFrame(rows)
    df = pd.concat([df[df["paper"] != "all"], df[df["paper"] == "all"]], ignore_index=True)
    columns: list[tuple[str, Callable[[pd.Series], str] | str]] = [
        ("paper", "paper"),
        ("model / agent", "label"),
        ("papers", "papers"),
        ("runs", "runs"),
    ]
    columns += [(c, _cell(c)) for c in categories]
    note = (
        "<p class='note'>A paper's row: ± SE over its runs. <b>all</b>: the mean over the "
        "runs of every paper, ± SE clustered by paper (runs of one paper are not "
        "independent); none with one paper.</p>"
    )
    return table(df, columns) + note


def _cell(column: str) -> Callable[[pd.Series], str]:
    return lambda r: str(r[column])


def papers_and_failures(ctx: Context) -> str:
    papers = an.researchcodebench_papers(ctx.data)
    errors = an.researchcodebench_errors(ctx.data)
    ablation = an.researchcodebench_ablation(ctx.data)
    out = ["<h3>Scaled pass@1 by paper</h3>"]
    svg = plots.grouped_bars(
        papers,
        "paper",
        "scaled_pass_at_1",
        "se",
        ctx.colors,
        "scaled pass@1 (%)",
        "ResearchCodeBench by paper",
    )
    if svg:
        out.append(
            figure(
                svg,
                "Lines-of-code weighted share of snippets whose tests pass, mean ± SE over epochs.",
            )
        )
    out.append(
        table(
            papers,
            [
                ("paper", "paper"),
                ("model / agent", "label"),
                ("epochs", "runs"),
                ("snippets", "snippets"),
                ("scaled pass@1 (%)", lambda r: _pm1(r["scaled_pass_at_1"], r["se"])),
                ("pass rate (%)", lambda r: number(r["pass_rate"], 1)),
                ("errored snippets", lambda r: bad_count(r["errors"])),
            ],
        )
    )
    out.append("<h3>Why snippets failed</h3>")
    svg = plots.error_bars(errors)
    if svg:
        out.append(figure(svg, "Each bar splits a model's failed snippets by failure class."))
    out.append(
        table(
            errors,
            [
                ("model / agent", "label"),
                ("failure", "failure"),
                ("count", "count"),
                ("share", lambda r: pct(r["share"])),
            ],
        )
    )
    out.append("<h3>With and without the paper</h3>")
    out.append(
        table(
            ablation,
            [
                ("model / agent", "model"),
                ("paper", "paper"),
                ("with paper (%)", lambda r: number(r["with_paper"], 1)),
                ("without paper (%)", lambda r: number(r["without_paper"], 1)),
                ("difference (points)", lambda r: _pm1(r["difference"], r["se"])),
                ("95% CI", lambda r: interval(r["ci_low"], r["ci_high"], 1)),
            ],
        )
    )
    out.append(
        "<p class='note'>Over all papers (<b>all</b>), the difference is paired over papers: "
        "± its SE over papers and a 95% interval with Student's t on papers − 1 degrees of "
        "freedom.</p>"
    )
    return "".join(out)


def _pm1(mean: object, se: object) -> str:
    text = number(mean, 1)
    return text if number(se) == "—" else f"{text} ± {number(se, 1)}"


SUBTASKS_NOTE = (
    "<p class='note'>ResearchGym's three figures, as its paper defines them: "
    "<b>completion</b>, the share of a run's sub-tasks with every metric reported, "
    "averaged over runs; <b>mean</b>, normalized performance on the task's primary metric "
    "(0 = a zero score, 1 = the paper's SOTA), averaged over runs; <b>improved</b>, the "
    "share of runs whose primary metric beats the paper's baseline. Below, per sub-task: "
    "the share of runs that completed it, and the share whose every metric beats the "
    "description's best baseline.</p>"
)


def subtasks(ctx: Context) -> str:
    subtasks = an.researchgym_subtasks(ctx.data)
    return (
        "<h3>Sub-tasks</h3>"
        + SUBTASKS_NOTE
        + table(
            subtasks,
            [
                ("task", "task_id"),
                ("sub-task", "id"),
                ("primary", "primary"),
                ("model / agent", "label"),
                ("runs", "runs"),
                ("completed", lambda r: pct(r["mean"])),
                ("beats best baselines", lambda r: pct(r["beats_baseline_rate"])),
            ],
        )
    )


SECTIONS: dict[str, Callable[[Context], str]] = {
    "rubric_categories": rubric_categories,
    "papers_and_failures": papers_and_failures,
    "subtasks": subtasks,
}
"""A family-specific section by the name a `FamilySpec.report_sections` gives it; each
draws the tables of its family's analysis reader (`labcoat.analysis._family_*`)."""


def family_extras(family: str) -> Callable[[Context], str] | None:
    """The sections the family's spec asks for, as one; None: none (or a family not
    registered here)."""
    if not is_family(family):
        return None
    names = family_spec(family).report_sections
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise LabcoatError(f"{family}: unknown report section(s) {', '.join(unknown)}")
    if not names:
        return None
    return lambda ctx: "".join(SECTIONS[n](ctx) for n in names)

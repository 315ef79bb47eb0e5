"""The results card, as Markdown (`labcoat card`, for a paper's appendix) and as the
report's first section; and the warning above a table whose runs mix versions."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from html import escape
from urllib.parse import unquote

import pandas as pd

from labcoat import analysis as an
from labcoat._run._budget import SpendSummary
from labcoat._version import __version__
from labcoat.report._budget_section import read_budgets

MAX_SHOWN_MIXES = 6  # per table; the card lists every one

TASK_HEADINGS = {
    "family": "family",
    "task_id": "task",
    "task_hash": "task hash",
    "files": "files",
    "inputs": "other inputs",
    "grader": "grader",
    "runs": "runs",
}
UNRECORDED_NOTE = (
    "{n} run(s) record no provenance (logs from before labcoat recorded it, or runs that "
    "errored before a score): the lines above leave them out."
)
MIX_NOTE = (
    "Runs of one task with different task contents, of one family with different graders "
    "or judges, or on different hardware classes (CPU model / GPU model) are not strictly "
    "comparable."
)


def _places(roots: Iterable[str]) -> str:
    return ", ".join(unquote(r.removeprefix("file://")) for r in roots) or "(none)"


Budgets = list[tuple[str, SpendSummary]]
"""`read_budgets`'s: (log folder, its spend ledger's summary) for each folder with one."""


def campaign_lines(budgets: Budgets) -> list[tuple[str, str]]:
    """One line per log folder with a spend ledger: the run's budget and what it spent
    (`--budget-usd`, `--budget-tokens`, `--budget-gpu-hours`; docs/cli.md#budgets)."""
    lines = []
    for folder, summary in budgets:
        spent, given = summary.spent, summary.budget.to_json()
        parts = [
            f"${spent['usd']:,.2f}" + (f" of ${given['usd']:,.2f}" if given.get("usd") else ""),
            f"{spent['tokens']:,.0f} tokens"
            + (f" of {given['tokens']:,}" if given.get("tokens") else ""),
            f"{spent['gpu_seconds'] / 3600:,.2f} GPU-hours"
            + (f" of {given['gpu_hours']:,.2f}" if given.get("gpu_hours") else ""),
        ]
        if not any(given.get(k) for k in ("usd", "tokens", "gpu_hours")):
            parts.append("no campaign budget")
        lines.append((f"Campaign ({folder})", "spent " + ", ".join(parts)))
    return lines


def _with_campaign(card: an.ResultsCard, budgets: Budgets) -> list[tuple[str, list]]:
    """The card's sections, with the campaign's budget lines added to its Budgets."""
    campaign = campaign_lines(budgets)
    return [
        (title, lines + campaign if title == "Budgets" else lines) for title, lines in card.sections
    ]


def _md(text: object) -> str:
    """A Markdown table cell: pipes escaped, on one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def card_markdown(data: an.RunData, card: an.ResultsCard | None = None) -> str:
    """The card as Markdown: a heading, one two-column table per section, the tasks with
    their hashes, and the mixed versions (or that there are none)."""
    card = card or an.results_card(data)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "## Results card",
        "",
        f"*From {_md(_places(data.roots))}; made by labcoat {__version__} on {when}.*",
    ]
    local = [unquote(r.removeprefix("file://")) for r in data.roots]
    for title, lines in _with_campaign(card, read_budgets(local)):
        out += ["", f"### {title}", "", "| | |", "|---|---|"]
        out += [f"| {_md(k)} | {_md(v)} |" for k, v in lines]
    out += ["", "### Tasks", ""]
    if card.tasks.empty:
        out.append("None.")
    else:
        out.append("| " + " | ".join(TASK_HEADINGS[c] for c in card.tasks.columns) + " |")
        out.append("|" + "---|" * len(card.tasks.columns))
        for _, row in card.tasks.iterrows():
            out.append("| " + " | ".join(_md(row[c]) for c in card.tasks.columns) + " |")
    out += ["", "### Mixed versions", ""]
    if card.mixes:
        out += [f"- **Warning** — {_md(m.describe())}" for m in card.mixes]
        out += ["", f"*{MIX_NOTE}*"]
    else:
        out.append("None: each task's runs share task contents, grader, judge and hardware class.")
    if card.unrecorded:
        out += ["", f"*{UNRECORDED_NOTE.format(n=card.unrecorded)}*"]
    return "\n".join(out) + "\n"


def _rows(lines: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in lines)
    return f'<table class="card">{body}</table>'


def _summary(card: an.ResultsCard) -> str:
    """The collapsed card's one line: what it holds, and whether versions mix."""
    mixes = len(card.mixes)
    mixed = f" · <b>{mixes} mixed version{'s' if mixes != 1 else ''}</b>" if mixes else ""
    return (
        "What ran, where, and under which versions and budgets, read from each score's "
        f"provenance{mixed}"
    )


def card_section(data: an.RunData, budgets: Budgets) -> str:
    """The report's section after the leaderboard, collapsed to one line: the card's
    tables (with the campaigns of `budgets`, the report's own read of the ledgers) and
    every mixed version."""
    card = an.results_card(data)
    parts = [
        '<section id="card"><h2>Results card</h2>',
        f'<details class="card"><summary>{_summary(card)}</summary>',
        "<p class='note'><code>labcoat card LOGDIR</code> prints it as Markdown for a "
        "paper's appendix.</p>",
    ]
    for title, lines in _with_campaign(card, budgets):
        parts.append(f"<h3>{escape(title)}</h3>{_rows(lines)}")
    if not card.tasks.empty:
        head = "".join(f"<th>{escape(TASK_HEADINGS[c])}</th>" for c in card.tasks.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(str(r[c]))}</td>" for c in card.tasks.columns) + "</tr>"
            for _, r in card.tasks.iterrows()
        )
        parts.append(
            f"<h3>Tasks</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        )
    if card.mixes:
        items = "".join(f"<li>{escape(m.describe())}</li>" for m in card.mixes)
        parts.append(f'<div class="warn"><b>Mixed versions.</b> {MIX_NOTE}<ul>{items}</ul></div>')
    if card.unrecorded:
        parts.append(f"<p class='note'>{escape(UNRECORDED_NOTE.format(n=card.unrecorded))}</p>")
    parts.append("</details></section>")
    return "".join(parts)


def mix_warning(runs: pd.DataFrame) -> str:
    """A warning for a table built from `runs`, when they mix versions; else nothing."""
    mixes = an.mixed_provenance(runs)
    if not mixes:
        return ""
    shown = "".join(f"<li>{escape(m.describe())}</li>" for m in mixes[:MAX_SHOWN_MIXES])
    more = len(mixes) - MAX_SHOWN_MIXES
    tail = f'<li><a href="#card">{more} more</a></li>' if more > 0 else ""
    return (
        '<div class="warn"><b>This table mixes versions</b> '
        f'(see the <a href="#card">results card</a>).<ul>{shown}{tail}</ul></div>'
    )

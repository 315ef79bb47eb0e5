"""Spent against the run's budget (`--budget-usd` ...), from each log folder's spend
ledger: the whole run, then by model and by family."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd

from labcoat._run._budget import CampaignBudget, Spend, SpendSummary, Tally
from labcoat._run._ledger import Ledger, ledger_path
from labcoat.report._html import table


def read_budgets(sources: Sequence[str | Path]) -> list[tuple[str, SpendSummary]]:
    """(folder, the ledger's summary against its last budget) for each local source
    folder that has a ledger."""
    found = []
    for source in sources:
        if "://" in str(source) or not Path(source).is_dir():
            continue
        records = list(Ledger(ledger_path(source)).records())
        budgets = [r["budget"] for r in records if isinstance(r.get("budget"), dict)]
        if not budgets:
            continue
        given = {k: budgets[-1].get(k) for k in ("usd", "tokens", "gpu_hours")}
        found.append((str(source), Tally(CampaignBudget(**given), records).summary()))
    return found


def _cells(spent: Spend, limits: dict[str, Any] | None = None) -> dict[str, str]:
    def show(value: float | None, text: str) -> str:
        return "—" if value is None else text

    limits = limits or {}
    return {
        "usd": f"${spent['usd']:,.2f}",
        "tokens": f"{spent['tokens']:,.0f}",
        "gpu": f"{spent['gpu_seconds'] / 3600:,.2f}",
        "usd_budget": show(limits.get("usd"), f"${limits.get('usd') or 0:,.2f}"),
        "tokens_budget": show(limits.get("tokens"), f"{limits.get('tokens') or 0:,}"),
        "gpu_budget": show(limits.get("gpu_hours"), f"{limits.get('gpu_hours') or 0:,.2f}"),
    }


def budget_section(budgets: list[tuple[str, SpendSummary]]) -> str:
    if not budgets:
        return ""
    rows = []
    for folder, summary in budgets:
        whole = _cells(summary.spent, summary.budget.to_json())
        rows.append({"what": f"whole run ({folder})", **whole})
        for kind, table_of in (("model", summary.by_model), ("family", summary.by_family)):
            for name, spent in sorted(table_of.items()):
                rows.append({"what": f"{kind}: {name}", **_cells(spent)})
    columns = [
        ("spent by", lambda r: escape(str(r["what"]))),
        ("$", lambda r: r["usd"]),
        ("$ budget", lambda r: r["usd_budget"]),
        ("tokens", lambda r: r["tokens"]),
        ("tokens budget", lambda r: r["tokens_budget"]),
        ("GPU-hours", lambda r: r["gpu"]),
        ("GPU-hours budget", lambda r: r["gpu_budget"]),
    ]
    note = (
        "<p class='note'>What the run spent, from its log folder's spend ledger "
        "(<code>.labcoat/spend.jsonl</code>: every launch of the run, resumes included), "
        "against the budget its last launch gave (docs/cli.md#budgets).</p>"
    )
    spent_out = [f"{escape(f)}: {escape(s.exhausted)}" for f, s in budgets if s.exhausted]
    if spent_out:
        note += "<p class='note'>The budget ran out: " + "; ".join(spent_out) + "</p>"
    return (
        f'<section id="budget"><h2>Budget</h2>{note}'
        f"{table(pd.DataFrame(rows), columns, table_id='budget-table')}</section>"
    )

"""The closing note of a budgeted run: spent against the budget, by model and family, and
the samples the budget did not let start."""

from __future__ import annotations

import click

from labcoat._run._budget import DIMENSIONS, NOT_STARTED, CampaignBudget, SpendSummary, Tally, fmt
from labcoat._run._config import RunConfig
from labcoat._run._ledger import Ledger
from labcoat._run._results import TaskResult


def budget_summary(
    ledger: str | None, budget: CampaignBudget, launch: str = ""
) -> SpendSummary | None:
    """The ledger's figures against `budget` (None: no ledger)."""
    if ledger is None:
        return None
    return Tally(budget, Ledger(ledger).records(), launch).summary()


def _figures(spent: dict[str, float], shown: list[str]) -> str:
    return ", ".join(fmt(d, spent.get(d, 0.0)) for d in shown)


def budget_lines(summary: SpendSummary, results: list[TaskResult]) -> list[str]:
    limits = summary.budget.limits()
    shown = [d for d in DIMENSIONS if d in limits] or ["usd"]
    spent = summary.spent
    parts = [
        f"{fmt(d, spent[d])} of {fmt(d, limits[d])}" if d in limits else fmt(d, spent[d])
        for d in shown
    ]
    earlier = summary.earlier
    line = "budget: spent " + "; ".join(parts)
    if any(earlier[d] for d in shown):
        line += f" (earlier launches in this log folder: {_figures(earlier, shown)})"
    lines = [line]
    for title, table in (("by model", summary.by_model), ("by family", summary.by_family)):
        if table:
            lines.append(
                f"  {title}: "
                + "; ".join(f"{k} {_figures(v, shown)}" for k, v in sorted(table.items()))
            )
    not_started = sum(r.not_started for r in results)
    ran = sum(r.runs for r in results)
    line = f"  samples: {ran} ran, {not_started} {NOT_STARTED}"
    if not_started:
        line += " (raise the budget and run the same command again to run them)"
    lines.append(line)
    if summary.exhausted:
        lines.append(f"  the budget is spent: {summary.exhausted}")
    return lines


def print_budget(options: RunConfig, results: list[TaskResult], err: bool) -> None:
    """The note, when the run had a budget (on stderr beside `--json`)."""
    budget = options.campaign
    summary = budget_summary(options.ledger, budget, options.launch) if budget.given else None
    if summary is not None:
        for line in budget_lines(summary, results):
            click.echo(line, err=err)

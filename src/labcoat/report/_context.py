"""What every section of the report shares: the data, colors, anchors, run links."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from labcoat import analysis as an
from labcoat.families import family_spec, is_family
from labcoat.report._html import link
from labcoat.report._plots import Colors

MAX_RUN_LINKS = 12  # per task row; the runs table has every run


@dataclass
class Context:
    data: an.RunData
    colors: Colors
    summary: pd.DataFrame
    runs_by_task: dict[tuple[str, str, str], list[str]]


def anchor(*parts: str) -> str:
    text = "-".join(parts).lower()
    return "".join(c if c.isalnum() else "-" for c in text)


def family_title(family: str) -> str:
    """The benchmark's own name (its spec's title); a family not registered here (a log
    from elsewhere) by its id."""
    if is_family(family):
        return family_spec(family).title
    return family or "(no family)"


UNREGISTERED_RANK = 1 << 30
"""After every registered family: a family whose logs came from elsewhere."""


def family_order(family: str) -> int:
    """Families by their spec's `report_rank`; those not registered here after them."""
    return family_spec(family).report_rank if is_family(family) else UNREGISTERED_RANK


def bad_count(n: int) -> str:
    """A count that should be zero: red when it is not."""
    return f'<span class="bad">{n}</span>' if n else "0"


def runs_by_task(runs: pd.DataFrame) -> dict[tuple[str, str, str], list[str]]:
    """Each (family, task, label)'s links to its runs in `inspect view`, in epoch order."""
    out: dict[tuple[str, str, str], list[str]] = {}
    ordered = runs.sort_values("epoch", key=lambda c: pd.to_numeric(c, errors="coerce"))
    keys = zip(
        ordered["family"], ordered["task_id"], ordered["label"], ordered["link"], strict=True
    )
    for family, task, label, href in keys:
        if isinstance(href, str) and href:
            out.setdefault((family, task, label), []).append(href)
    return out


def run_links(ctx: Context, row: pd.Series) -> str:
    runs = ctx.runs_by_task.get((row["family"], row["task_id"], row["label"]), [])
    shown = [link(href, f"#{i}") for i, href in enumerate(runs[:MAX_RUN_LINKS], 1)]
    more = len(runs) - MAX_RUN_LINKS
    tail = f' <a href="#runs">+{more}</a>' if more > 0 else ""
    return f'<span class="runs">{"".join(shown)}{tail}</span>'

"""HTML pieces: the page shell (inline CSS and a tiny filter script) and tables."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

import numpy as np
import pandas as pd

Cell = Callable[[pd.Series], str]
"""Renders one cell of a row as HTML (already escaped)."""

# table headers are not sticky: a sticky header stays at the bottom of a table scrolled
# past (and in full-page screenshots), reading as a footer
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222}
header{background:#243447;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px} header p{margin:4px 0 0;opacity:.85}
header code{background:#ffffff22;padding:1px 4px;border-radius:3px}
nav{padding:8px 24px;background:#eef1f4;position:sticky;top:0;z-index:1}
nav a{margin-right:14px;color:#243447}
main{padding:8px 24px 40px;max-width:1400px}
h2{border-bottom:2px solid #243447;padding-bottom:4px;margin-top:32px}
h3{margin:22px 0 6px} h4{margin:14px 0 4px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f8}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.error td{background:#fdecea} tr.partial td{background:#fff6e0}
tr.not-started td{background:#f2f2f2;color:#666}
tr.flagged td:first-child{border-left:4px solid #b3261e}
.plots{display:flex;flex-wrap:wrap;gap:10px 18px}
figure{margin:0} figcaption{font-size:12px;color:#555;max-width:560px}
svg.plot{background:#fff;border:1px solid #e3e3e3}
svg.plot text{font-size:11px;fill:#333} svg.plot .label{font-size:12px;fill:#111}
svg.plot .grid{stroke:#eee} svg.plot .axis{stroke:#888}
svg.plot .ref{stroke:#999;stroke-dasharray:2 3}
.note{color:#555;font-size:13px;max-width:900px}
.bad{color:#b3261e;font-weight:600}
.warn{background:#fff6e0;border-left:4px solid #e0a800;padding:4px 10px;margin:8px 0}
.warn ul{margin:4px 0;padding-left:20px}
table.card th{text-align:left;white-space:nowrap}
details.card>summary{cursor:pointer;color:#243447}
.runs a{margin-right:4px}
.counts{color:#666;font-size:12px;white-space:nowrap}
input.filter{margin:6px 0;padding:4px 8px;width:320px}
"""

# filters the rows of a table by the text typed above it; nothing is fetched
SCRIPT = """
document.querySelectorAll('input.filter').forEach(function(box){
  var rows=document.getElementById(box.dataset.table).tBodies[0].rows;
  box.addEventListener('input',function(){
    var q=box.value.toLowerCase();
    for(var i=0;i<rows.length;i++){
      rows[i].style.display=rows[i].textContent.toLowerCase().indexOf(q)<0?'none':'';
    }
  });
});
// a link to the results card opens it: it starts collapsed
var card=document.querySelector('#card details.card');
if(card){
  document.querySelectorAll('a[href="#card"]').forEach(function(a){
    a.addEventListener('click',function(){card.open=true;});
  });
  if(location.hash==='#card'){card.open=true;}
}
"""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, numbers.Real) and math.isnan(value))


def number(value: Any, digits: int = 3) -> str:
    """Integers as integers, other numbers to `digits` places, missing as a dash."""
    if _missing(value):
        return "—"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        return f"{value:.{digits}f}" if abs(float(value)) < 1e5 else f"{value:,.0f}"
    return escape(str(value))


def count(value: Any) -> str:
    """A whole number (counts stored as floats beside missing values)."""
    return "—" if _missing(value) else f"{round(float(value)):,}"


def pm(mean: Any, se: Any) -> str:
    text = number(mean)
    return text if number(se) == "—" else f"{text} ± {number(se)}"


def _counted(n: Any, noun: str) -> str:
    n = 0 if _missing(n) else int(n)
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def headline(mean: Any, se: Any, tasks: Any, runs: Any) -> str:
    """A headline figure: `mean ± SE (7 tasks, 56 runs)`, the SE being over tasks.

    With fewer than two tasks there is no SE over tasks: a dash, whose tooltip says why."""
    counts = f'<span class="counts">({_counted(tasks, "task")}, {_counted(runs, "run")})</span>'
    if _missing(mean):
        return f"— {counts}"
    if not _missing(se):
        return f"{number(mean)} ± {number(se)} {counts}"
    why = NO_SE_ONE_TASK if not _missing(tasks) and int(tasks) < 2 else "no SE: too few scores"
    return f'{number(mean)} ± <span title="{escape(why)}">—</span> {counts}'


NO_SE_ONE_TASK = "one task: an SE over tasks needs two or more (it is not 0)"


def interval(low: Any, high: Any, digits: int = 3) -> str:
    """A confidence interval `[low, high]`, or a dash when there is none."""
    if _missing(low) or _missing(high):
        return "—"
    return f"[{number(low, digits)}, {number(high, digits)}]"


def pct(value: Any) -> str:
    if _missing(value):
        return "—"
    return f"{100 * value:.0f}%"


def hours(value: Any) -> str:
    if _missing(value):
        return "—"
    seconds = value * 3600
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{value:.2f} h"


def money(value: Any) -> str:
    if _missing(value):
        return "—"
    return f"${value:,.2f}"


def link(href: str, text: str) -> str:
    return f'<a href="{escape(href, quote=True)}">{escape(text)}</a>'


def table(
    df: pd.DataFrame,
    columns: Sequence[tuple[str, Cell | str]],
    *,
    table_id: str | None = None,
    row_class: Callable[[pd.Series], str] | None = None,
    numeric: Sequence[str] = (),
    filter_box: bool = False,
) -> str:
    """A table of `df`: `columns` are (heading, column name or cell renderer)."""
    if df.empty:
        return '<p class="note">None.</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h, _ in columns)
    body = []
    for _, row in df.iterrows():
        cells = []
        for heading, how in columns:
            html = how(row) if callable(how) else number(row.get(how))
            klass = ' class="n"' if heading in numeric else ""
            cells.append(f"<td{klass}>{html}</td>")
        klass = f' class="{row_class(row)}"' if row_class else ""
        body.append(f"<tr{klass}>{''.join(cells)}</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    box = (
        f'<input class="filter" data-table="{table_id}" placeholder="filter rows…">'
        if filter_box and table_id
        else ""
    )
    return (
        f"{box}<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"


def page(title: str, header: str, nav: list[tuple[str, str]], sections: list[str]) -> str:
    links = "".join(link(f"#{anchor}", text) for anchor, text in nav)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header>{header}</header><nav>{links}</nav><main>{''.join(sections)}</main>"
        f"<script>{SCRIPT}</script></body></html>"
    )

"""What `labcoat regrade` changed: the report's scores are the newest grading's; this
section lists every regraded run with its old and new score, the grader and when."""

from __future__ import annotations

from html import escape

from labcoat import analysis as an
from labcoat.report._context import Context
from labcoat.report._html import Cell, number, table


def regrades(ctx: Context) -> str:
    changes = an.regrade_changes(ctx.data.samples)
    if changes.empty:
        return ""
    moved = (changes["new"].fillna(-1e9) - changes["old"].fillna(-1e9)).abs() > an.TOLERANCE
    changes = changes.assign(changed=moved).sort_values(["changed", "task_id"], ascending=False)
    columns: list[tuple[str, Cell | str]] = [
        ("task", lambda r: escape(str(r["task_id"]))),
        ("sample", lambda r: escape(str(r["sample_id"]))),
        ("epoch", "epoch"),
        ("old score", lambda r: number(r["old"])),
        ("new score", lambda r: number(r["new"])),
        ("changed", lambda r: "yes" if r["changed"] else ""),
        ("grader", lambda r: f"<code>{escape(str(r['grader']))}</code>"),
        ("regraded", lambda r: escape(str(r["regraded_at"])[:19])),
    ]
    note = (
        f"<p class='note'>{int(moved.sum())} of {len(changes)} regraded runs changed by more "
        f"than {an.TOLERANCE:g}. Every table and plot above uses the newest grading of each run "
        "(<code>labcoat regrade</code>, docs/regrade.md); the original logs are unchanged.</p>"
    )
    body = table(changes, columns, table_id="regrades-table", numeric=("epoch",))
    return f'<section id="regrades"><h2>Regrades</h2>{note}{body}</section>'

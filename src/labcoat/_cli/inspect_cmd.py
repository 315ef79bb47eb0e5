"""`labcoat inspect LOGDIR...`: suspected cheating in every run, with evidence."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labcoat._errors import LabcoatError

if TYPE_CHECKING:
    from labcoat.integrity import Inspection


@click.command("inspect")
@click.argument("log_dirs", nargs=-1, required=True, metavar="LOGDIR...")
@click.option(
    "--model",
    metavar="MODEL",
    help="Also have this Inspect model review each run an agent acted in (e.g. openai/gpt-5-mini).",
)
@click.option("--dry-run", is_flag=True, help="Report only; leave the logs as they are.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option("--all", "show_all", is_flag=True, help="Also list runs with notes but no flag.")
def command(
    log_dirs: tuple[str, ...], model: str | None, dry_run: bool, as_json: bool, show_all: bool
) -> None:
    """Read each run's transcript, workspace history and scoring records in LOGDIR
    (folders or .eval files) and report suspected cheating with evidence. Findings are
    written into the logs (`inspect view` shows them as score edits) and flagged runs
    are marked in every table. Exits 1 when a run is flagged."""
    from labcoat.integrity import inspect_logs

    for folder in log_dirs:
        if "://" not in folder and not Path(folder).exists():
            raise LabcoatError(f"{folder}: no such file or folder")
    inspection = inspect_logs(list(log_dirs), model=model, write=not dry_run)
    if not inspection.logs:
        raise LabcoatError(f"no .eval logs found in {', '.join(log_dirs)}")
    if as_json:
        click.echo(json.dumps(inspection.to_json(), indent=2))
    else:
        _print(inspection, show_all)
    sys.exit(1 if inspection.flagged else 0)


def _print(inspection: Inspection, show_all: bool) -> None:
    shown = [r for r in inspection.runs if r.flagged or (show_all and r.findings)]
    console = Console()
    if shown:
        table = Table(title="labcoat inspect: suspected cheating", show_lines=True)
        for column in ("run", "agent", "flagged", "findings and evidence"):
            table.add_column(column, overflow="fold")
        for run in shown:
            lines = [f"grader: {escape(f)}" for f in run.grader_flags]
            for finding in run.findings:
                mark = "[red]⚑[/red] " if finding.flag else "· "
                lines.append(mark + escape(f"{finding.detector}: {finding.summary}"))
                lines += [f"    {escape(e)}" for e in finding.evidence[:3]]
            where = (
                f"{run.family}/{run.task_id}\n{run.sample_id} #{run.epoch}\n{Path(run.log).name}"
            )
            table.add_row(
                escape(where), run.agent, "yes" if run.flagged else "no", "\n".join(lines)
            )
        console.print(table)
    written = (
        f"; findings written into {len(inspection.written)} log(s)" if inspection.written else ""
    )
    reviewer = f" (reviewer: {inspection.model})" if inspection.model else ""
    ran = [r for r in inspection.runs if r.cannot_run_here is None]
    apart = len(inspection.runs) - len(ran)
    elsewhere = f" ({apart} could not run here: no run to inspect)" if apart else ""
    console.print(
        f"{len(ran)} run(s) in {len(inspection.logs)} log(s) inspected{reviewer}{elsewhere}: "
        f"{len(inspection.flagged)} flagged{written}"
    )

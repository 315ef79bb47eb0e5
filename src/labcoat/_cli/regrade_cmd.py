"""`labcoat regrade LOGDIR`: grade every kept final workspace again (docs/regrade.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from labcoat._cli._options import read_secrets, secrets_option
from labcoat._cli._output import print_table, stdout_to_stderr
from labcoat._errors import LabcoatError


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _starting(samples: int, logs: int) -> None:
    """One line while the regrade runs (Inspect's display is off), in a terminal only."""
    if sys.stderr.isatty():
        click.echo(f"regrading {samples} sample(s) of {logs} log(s)…", err=True)


@click.command("regrade")
@click.argument("log_dir", metavar="LOGDIR")
@click.option(
    "--task", "task_ids", multiple=True, metavar="ID", help="Only these tasks (repeatable)."
)
@click.option("--max-samples", type=click.IntRange(min=1), help="Samples graded at once.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@secrets_option
def command(
    log_dir: str,
    task_ids: tuple[str, ...],
    max_samples: int | None,
    as_json: bool,
    secrets_file: str | None,
) -> None:
    """Grade every sample under LOGDIR whose final workspace was kept again, with the
    current graders, in fresh protected sandboxes. The new scores go to new logs in
    FOLDER.regrades/<time>/ beside each original log's FOLDER (the original logs are not
    changed, and the eval resumes there); reports and analysis then use the newest
    grading. A --secrets FILE replaces the one the runs named.
    Exits 1 when a regrade errored."""
    from labcoat.regrade import regrade_logs

    folder = Path(log_dir)
    if not folder.exists():
        raise LabcoatError(f"{log_dir}: no such folder")
    if not folder.is_dir():
        raise LabcoatError(f"{log_dir}: not a folder (give the folder of the .eval logs)")
    from labcoat.families import EvalChoices, eval_task_args

    read_secrets(secrets_file)
    # the secrets file goes to the families that read one when they score again
    task_args = eval_task_args(EvalChoices(secrets_file=secrets_file), {})
    # the regrade's own table is its output: Inspect's per-task panels (its eval's
    # display) are left out, their content is in the regrade logs; anything else that
    # writes to stdout meanwhile (a child process, a warning) goes to stderr
    with stdout_to_stderr():
        out, rows = regrade_logs(
            folder,
            task_ids=list(task_ids) or None,
            max_samples=max_samples,
            display="none",
            task_args=task_args,
            starting=None if as_json else _starting,
        )
    if as_json:
        click.echo(
            json.dumps(
                {"logs": [str(p) for p in out], "samples": [r.to_json() for r in rows]},
                indent=2,
            )
        )
    else:
        table = Table(title=f"labcoat regrade {escape(log_dir)}")
        for column in ("task", "sample", "epoch", "old normalized", "new normalized", "changed?"):
            table.add_column(column, overflow="fold")
        for r in rows:
            if r.not_regradable:
                verdict = f"not regradable: {r.not_regradable}"
            elif r.error:
                verdict = f"error: {r.error}"
            else:
                verdict = "yes" if r.changed else "no"
                if r.changed and r.timed:
                    verdict = "re-measured (a timing score moves with the machine's noise)"
                if r.missing:
                    verdict += f" ({len(r.missing)} file(s) kept by reference were absent)"
            table.add_row(
                escape(r.task),
                escape(r.sample_id),
                str(r.epoch),
                _fmt(r.old),
                _fmt(r.new),
                escape(verdict),
            )
        print_table(table, markup=True)  # its cells are escaped
        where = f"; logs in {', '.join(map(str, out))}" if out else ""
        regraded = sum(1 for r in rows if r.not_regradable is None)
        click.echo(f"{regraded} sample(s) regraded, {len(rows) - regraded} not regradable{where}")
    sys.exit(1 if any(r.error for r in rows) else 0)

"""`labcoat report LOGDIR... [-o report.html]`: one self-contained HTML report of runs."""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from labcoat._cli._options import POSITIVE
from labcoat._util.remote import credentials_named

STAGES = {"headers": "reading log headers", "samples": "reading samples", "report": "building"}


class _PlainProgress:
    """Progress for a terminal-less run (CI, pipes): a line per ~10% of each stage, and
    only its end for a stage of few steps (a line per log of a 7-log folder is noise)."""

    def __init__(self) -> None:
        self._shown: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        step = total if total < 20 else total // 10
        if done == total or done - self._shown.get(stage, 0) >= step:
            self._shown[stage] = done
            click.echo(f"labcoat report: {STAGES.get(stage, stage)} {done}/{total}", err=True)


def _warn(message: str) -> None:
    click.echo(f"labcoat report: warning: skipped {message}", err=True)


@click.command("report")
@click.argument("log_dirs", nargs=-1, required=True, metavar="LOGDIR...")
@click.option(
    "-o",
    "--output",
    default="report.html",
    show_default=True,
    type=click.Path(path_type=Path),
    help="The HTML file to write.",
)
@click.option(
    "--humans",
    type=click.Path(exists=True, path_type=Path),
    metavar="CSV",
    help="Human baseline runs: task, run_id, elapsed_minutes, score.",
)
@click.option(
    "--view-url",
    metavar="URL",
    help="Where `inspect view --log-dir LOGDIR` serves (default http://127.0.0.1:7575); "
    "run links point there.",
)
@click.option(
    "--human-hourly-usd",
    type=POSITIVE,
    metavar="USD",
    help="Cost of a human hour, for human runs whose CSV gives no cost.",
)
@click.option("--title", default="labcoat report", show_default=True)
def command(
    log_dirs: tuple[str, ...],
    output: Path,
    humans: Path | None,
    view_url: str | None,
    human_hourly_usd: float | None,
    title: str,
) -> None:
    """Write one HTML file (no network needed) with a leaderboard, per-family sections,
    plots and links to every run, from the .eval logs in LOGDIR (folders, files or
    fsspec URLs such as s3://bucket/logs)."""
    from labcoat.report import write_report  # pandas loads only for this command

    start = time.monotonic()
    report = functools.partial(
        write_report,
        humans=humans,
        view_url=view_url,
        human_hourly_usd=human_hourly_usd,
        title=title,
        warn=_warn,
    )
    if sys.stderr.isatty():
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            tasks: dict[str, TaskID] = {}

            def show(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(STAGES.get(stage, stage), total=total)
                bar.update(tasks[stage], completed=done, total=total)

            with credentials_named(log_dirs):
                path = report(list(log_dirs), output, progress=show)
    else:
        with credentials_named(log_dirs):
            path = report(list(log_dirs), output, progress=_PlainProgress())
    size = path.stat().st_size / 1024
    click.echo(f"report: {path} ({size:,.0f} KiB, {time.monotonic() - start:.1f} s)")

"""`labcoat list TARGET [--json]`: the tasks a target holds, in any family's format."""

from __future__ import annotations

import json
import sys

import click
from rich.table import Table

from labcoat._cli._options import read_secrets, secrets_option
from labcoat._cli._output import print_table
from labcoat._cli._say import say
from labcoat._errors import LabcoatError
from labcoat._run._tasks import NO_TASKS
from labcoat.families import TaskEntry, discover, family_names, select
from labcoat.families.rebench import without_image_builds
from labcoat.sandbox import gpu_shortfall
from labcoat.suites import resolve_target


def _subtasks(extra: dict) -> str:
    if "subtasks" not in extra:
        return ""
    if extra["subtasks"] is None:
        return "undeclared"
    return f"{extra['subtasks']} ({extra.get('primary_subtasks', 0)} primary)"


def _cannot_run_here(entries: list[TaskEntry]) -> dict[str, str]:
    """Why the tasks of a family folder (`fam` of `fam/task`) cannot run on this machine,
    as far as listing can tell without building anything: the GPUs they ask for."""
    found: dict[str, str] = {}
    for e in entries:
        short = (
            None if e.problem else gpu_shortfall(e.extra.get("gpus") or 0, e.extra.get("gpu_model"))
        )
        if short:
            found.setdefault(e.id.split("/", 1)[0], f"the task {short}")
    return found


@click.command("list")
@click.argument("target")
@click.option("--family", type=click.Choice(family_names()), help="Only this family.")
@secrets_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per task.")
def command(target: str, family: str | None, secrets_file: str | None, as_json: bool) -> None:
    """List the tasks in TARGET: `mini` (bundled) or a path to a benchmark folder."""
    read_secrets(secrets_file)  # before discovery: a family's get_tasks() may need one
    # listing builds no task images and runs no install() (RE-Bench's get_tasks() runs
    # in the family's Python environment when its source does not spell out its tasks)
    with without_image_builds():
        entries = select(discover(resolve_target(target)), None, family)
    if not entries:
        raise LabcoatError(f"{target}: {NO_TASKS}" + (f" of family {family}" if family else ""))
    broken = [e for e in entries if e.problem]
    if as_json:
        click.echo(json.dumps([e.to_json() for e in entries], indent=2))
    elif len(broken) < len(entries):  # nothing to list when every task is broken
        table = Table(title=f"{len(entries) - len(broken)} task(s) in {target}")
        # families whose tasks declare sub-tasks (ResearchGym) get a column for them
        with_subtasks = any("subtasks" in e.extra for e in entries)
        columns = ("id", "family", "title", "samples", *(("sub-tasks",) if with_subtasks else ()))
        for column in columns:
            table.add_column(column, overflow="fold")
        for e in entries:
            if not e.problem:
                row = [e.id, e.family, e.title, str(e.samples)]
                if with_subtasks:
                    row.append(_subtasks(e.extra))
                table.add_row(*row)
        print_table(table)
    for folder, reason in _cannot_run_here(entries).items():
        say(f"{folder}: cannot run here: {reason}")
    for e in broken:
        say(f"error: {e.family} task {e.id}: {e.problem}")
    # the others are listed; the exit code says that some of TARGET is broken
    sys.exit(2 if broken else 0)

"""`labcoat check TARGET`: preflight — what would stop a task, before a long run."""

from __future__ import annotations

import contextlib
import json
import sys

import anyio
import click

from labcoat._cli._options import read_secrets, run_choices, secrets_option, selection_options
from labcoat._run._check import (
    DOCKER_GUARANTEES,
    check_entries,
    describe_target,
    docker_engine_problem,
)
from labcoat._run._tasks import selected_entries
from labcoat._util.run_choices import using
from labcoat.families import TaskEntry
from labcoat.families._entry import OWN_SYSTEM, SYSTEM
from labcoat.families._sandbox import SANDBOX_KINDS
from labcoat.families.rebench import without_image_builds
from labcoat.sandbox import (
    Guarantees,
    container_signal,
    guarantees_here,
    missing_here,
    namespaces_refused,
    resolver,
    usable_gpus,
)


@click.command("check")
@click.argument("target", required=False)
@selection_options
@click.option(
    "--no-build",
    is_flag=True,
    help="Don't build the tasks' Python environments (faster; misses unbuildable requirements).",
)
@click.option(
    "--sandbox",
    type=click.Choice(SANDBOX_KINDS),
    default="bwrap",
    show_default=True,
    help="The agents' sandbox to check for (docker: experimental, what it drops and its engine).",
)
@secrets_option
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def command(
    target: str | None,
    task_ids: tuple[str, ...],
    family: str | None,
    no_build: bool,
    sandbox: str,
    secrets_file: str | None,
    as_json: bool,
    task_python: str | None = None,
    any_gpu_model: bool = False,
) -> None:
    """Say what every sandbox gets on this machine and, for every task of TARGET, what
    would fail: unbuildable requirements or images, Git LFS pointers instead of files,
    GPUs asked for and missing, missing secrets or sidecars, aux VMs asked for; in a
    container, each permission the sandbox lacks with its Docker and Kubernetes remedy.
    Without TARGET, only this machine is checked.
    One line per problem; exit 2 if there is any."""
    if target is None and (task_ids or family):
        raise click.UsageError("--task and --family choose tasks of a TARGET: give one")
    read_secrets(secrets_file)
    entries: list[TaskEntry] = []
    checked = None
    if target is not None:
        # --no-build: no task image is built to learn a family's tasks either
        with (
            using(run_choices(task_python, any_gpu_model)),  # builds see --python
            without_image_builds() if no_build else contextlib.nullcontext(),
        ):
            entries = selected_entries(target, list(task_ids), family)
            checked = anyio.run(check_entries, entries, not no_build)
    problems = checked.problems if checked else []
    missing = missing_here()  # in a container: what it withholds (a bwrap tried)
    fatal = [m.line() for m in missing if m.fatal]
    # a container's own refusal names its remedies; the generic one would repeat it
    refused = None if fatal else namespaces_refused()
    engine = docker_engine_problem() if sandbox == "docker" else None
    if as_json:
        click.echo(json.dumps([p.to_json() for p in problems], indent=2))
    else:
        for problem in problems:
            click.echo(problem.line())
        if refused:
            click.echo(f"labcoat check: {refused}")
        for line in fatal:
            click.echo(f"labcoat check: missing in this container: {line}")
        if engine:
            click.echo(f"labcoat check: --sandbox docker cannot run here: {engine}")
        here = guarantees_here()  # probes (a cgroup made and removed): once
        click.echo(f"labcoat check: this machine: {_machine_line(here)}", err=True)
        for line in here.weaker:
            click.echo(f"labcoat check: weaker than root's: {line}", err=True)
        for line in (m.line() for m in missing if not m.fatal):
            click.echo(f"labcoat check: weaker in this container: {line}", err=True)
        if (signal := container_signal()) and not missing:
            click.echo(f"labcoat check: in {signal}: it gives the sandbox all it needs", err=True)
        if sandbox == "docker":
            click.echo(f"labcoat check: {DOCKER_GUARANTEES}", err=True)
        for system, tasks in _own_systems(entries).items():
            click.echo(f"labcoat check: on {system}: {_some(tasks)}", err=True)
        for date, tasks in (checked.dates if checked else {}).items():
            click.echo(f"labcoat check: resolved as of {date}: {_some(tasks)}", err=True)
        troubled = len({(p.task, p.family) for p in problems})
        what = (
            f"{describe_target(entries)}: "
            + (f"{troubled} with problems" if problems else "no problems found")
            if target is not None
            else "no TARGET: this machine only (`labcoat check mini` checks the bundled "
            "suite's tasks too)"
        )
        click.echo(f"labcoat check: {what}", err=True)
    sys.exit(2 if problems or refused or fatal or engine else 0)


def _some(tasks: list[str]) -> str:
    return ", ".join(tasks[:5]) + (f" and {len(tasks) - 5} more" if len(tasks) > 5 else "")


def _own_systems(entries: list[TaskEntry]) -> dict[str, list[str]]:
    """{system: tasks} for the tasks that do not run on the host's system tree."""
    found: dict[str, list[str]] = {}
    for entry in entries:
        if entry.extra.get(OWN_SYSTEM):
            found.setdefault(str(entry.extra.get(SYSTEM)), []).append(entry.id)
    return found


def _machine_line(here: Guarantees) -> str:
    """What every task's sandbox gets here: its isolation mode, its limits' and disk
    quota's mechanisms, the GPUs to lend."""
    gpus = usable_gpus()
    models = sorted({g.model or "model unknown" for g in gpus})
    lent = f"{len(gpus)} GPU(s) to lend ({', '.join(models)})" if gpus else "no GPU"
    return (
        f"isolation {here.mode}; memory and process limits by {here.limits}; disk quota by "
        f"{here.disk}; {lent}; environments resolved by {resolver().describe()}"
    )

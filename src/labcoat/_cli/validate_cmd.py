"""`labcoat validate TARGET`: every task's oracle must score ~1 and its noop ~0."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace

import click

from labcoat._cli._budget_note import print_budget
from labcoat._cli._options import (
    campaign_budget,
    campaign_options,
    read_secrets,
    run_choices,
    run_options,
    secrets_option,
    selection_options,
)
from labcoat._cli._options import ray_address as ray_address_of
from labcoat._cli._output import stdout_to_stderr
from labcoat._cli._tables import print_verdicts
from labcoat._errors import Interrupted
from labcoat._run._config import RunConfig
from labcoat._run._execute import check_run_options, run_entries
from labcoat._run._logdir import log_dir_lock
from labcoat._run._tasks import default_log_dir, selected_entries
from labcoat._run._validate import Verdict, judge
from labcoat._unavailable import EXIT_NOTHING_RAN, LABEL
from labcoat._util.quiet import quiet_console
from labcoat._util.run_choices import using
from labcoat.families import EvalChoices, eval_task_args
from labcoat.sandbox import weaker_isolation

# the log folder's parts (docs/cli.md)
CONCURRENT = "concurrent"
"""Tasks with a reference solution: the oracle and the noop, samples side by side."""
NO_ORACLE = "no-oracle"
"""Tasks without one: the noop alone."""
TIMING = "timing-sensitive"
"""Tasks whose score times code: after the rest, one sample at a time."""


@click.command("validate")
@click.argument("target")
@selection_options
@run_options
@secrets_option
@campaign_options
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
def command(
    target: str,
    task_ids: tuple[str, ...],
    family: str | None,
    task_python: str | None,
    any_gpu_model: bool,
    sandbox: str,
    log_dir: str | None,
    max_samples: int | None,
    ray_address: str | None,
    secrets_file: str | None,
    no_inspect: bool,
    budget_usd: float | None,
    budget_tokens: int | None,
    budget_gpu_hours: float | None,
    as_json: bool,
) -> None:
    """Run the oracle and noop agents on every task of TARGET; exit 0 only if all pass."""
    read_secrets(secrets_file)
    task_args = eval_task_args(EvalChoices(secrets_file=secrets_file), {})
    choices = run_choices(task_python, any_gpu_model)
    with using(choices):  # discovery checks a task's GPUs (--any-gpu-model)
        entries = selected_entries(target, list(task_ids), family, runnable=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = log_dir or f"{default_log_dir('validate', target)}-{stamp}"
    options = RunConfig(
        agents=["oracle", "noop"],
        sandbox=sandbox,
        log_dir=folder,
        max_samples=max_samples,
        inspect=not no_inspect,
        # the verdicts' table is the output: Inspect's per-task panels are left out (they
        # are in the logs), as `labcoat regrade` leaves them out
        display="none",
        ray=ray_address_of(ray_address),
        task_args=task_args,
        campaign=campaign_budget(budget_usd, budget_tokens, budget_gpu_hours),
        choices=choices,
        budget_dir=folder,  # one ledger for the parts below
    )
    check_run_options(options)  # the budget's checks, before the log folder is made
    # tasks that time code run after the rest, one sample at a time, so the harness's
    # own work on other samples doesn't land in their measurements; tasks without a
    # reference solution get the noop alone
    timed = [e for e in entries if e.extra.get("timing_sensitive")]
    untimed = [e for e in entries if not e.extra.get("timing_sensitive") and e.has_oracle]
    noop_only = [e for e in entries if not e.extra.get("timing_sensitive") and not e.has_oracle]
    # each part is an eval set of its own, in a folder of its own: Inspect reads an eval
    # set's folder recursively and refuses the logs of another it finds there
    parts = [
        (untimed, replace(options, log_dir=f"{options.log_dir}/{CONCURRENT}")),
        (noop_only, replace(options, agents=["noop"], log_dir=f"{options.log_dir}/{NO_ORACLE}")),
        (
            timed,
            replace(options, log_dir=f"{options.log_dir}/{TIMING}", max_samples=1, max_tasks=1),
        ),
    ]
    results = []
    with log_dir_lock(options.log_dir), stdout_to_stderr():
        try:
            for part_entries, part_options in parts:
                if part_entries:
                    _starting(part_entries, part_options.agents)
                    # per part: a run's end gives the console its voice back
                    with quiet_console():
                        results += run_entries(target, part_entries, part_options)[1]
        except Interrupted:
            raise Interrupted(
                f"unfinished samples are marked cancelled in the logs in {options.log_dir}; "
                f"run the same command{'' if log_dir else f' with --log-dir {options.log_dir}'} "
                "again to finish them"
            ) from None
    verdicts = judge(entries, results)
    if sandbox == "bwrap" and (weaker := weaker_isolation()):  # what these verdicts lack
        click.echo(f"labcoat validate: {weaker}", err=True)
    if as_json:
        click.echo(json.dumps([v.to_json() for v in verdicts], indent=2))
        print_budget(options, results, err=True)
    else:
        print_verdicts(verdicts)
        click.echo(summary_line(verdicts))
        click.echo(f"logs: {options.log_dir}")
        print_budget(options, results, err=False)
    sys.exit(exit_code(verdicts))


def _starting(entries: list, agents: list[str]) -> None:
    """One line per part while it runs (Inspect's display is off), in a terminal only."""
    if sys.stderr.isatty():
        click.echo(f"validating {len(entries)} task(s) with {' and '.join(agents)}…", err=True)


def exit_code(verdicts: list[Verdict]) -> int:
    """0: every task validated here passed (at least one was); 1: a task failed;
    EXIT_NOTHING_RAN: none failed, and none could be validated on this machine."""
    if not all(v.passed for v in verdicts):
        return 1
    return 0 if any(v.validated for v in verdicts) else EXIT_NOTHING_RAN


def summary_line(verdicts: list[Verdict]) -> str:
    """How many tasks were validated and passed, and how many were not validated here."""
    validated = [v for v in verdicts if v.validated]
    passed = sum(v.passed for v in validated)
    cannot = [v for v in verdicts if v.unavailable]
    manual = sum(v.manual for v in verdicts)
    apart = [f"{len(cannot)} {LABEL}"] if cannot else []
    apart += [f"{manual} need(s) a manual score"] if manual else []
    if not validated and cannot:
        first = cannot[0]
        return (
            f"nothing was validated on this machine: {', '.join(apart)} "
            f"({first.entry.id}: {first.unavailable}); run it where they can "
            f"(exit {EXIT_NOTHING_RAN})"
        )
    line = f"{len(validated)} task(s) validated: {passed} passed, {len(validated) - passed} failed"
    return line + (f"; not validated: {', '.join(apart)}" if apart else "")

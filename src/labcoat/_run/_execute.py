"""Running Inspect eval sets for labcoat and reporting what they scored."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

from inspect_ai import eval_set
from inspect_ai.log import list_eval_logs, read_eval_log

from labcoat._errors import Interrupted, LabcoatError
from labcoat._run._budget_bank import Account, LocalBank
from labcoat._run._budget_guard import guarding
from labcoat._run._config import RunConfig, inspect_eval_args
from labcoat._run._costs import load_prices, register_prices, require_price
from labcoat._run._inspected import inspected_results
from labcoat._run._interrupts import guarded
from labcoat._run._interrupts import interrupted as was_interrupted
from labcoat._run._models import check_model
from labcoat._run._results import TaskResult, only_not_run
from labcoat._run._resume import resume_line
from labcoat._run._tasks import build_tasks
from labcoat._unavailable import reason_of
from labcoat._util.inspect_names import NO_MODEL
from labcoat._util.run_choices import using
from labcoat.agents import WITHOUT_MODEL
from labcoat.families import TaskEntry


def check_run_options(options: RunConfig) -> dict[str, Any]:
    """Everything about the options that can be wrong, found before a sandbox starts.
    Returns the model prices the run uses (registered with Inspect)."""
    needs_model = [a for a in options.agents if a not in WITHOUT_MODEL]
    if needs_model and not options.model:
        raise LabcoatError(
            f"the {needs_model[0]} agent needs a model: pass --model (e.g. openai/gpt-5, "
            "or labcoat/scripted to try it offline)"
        )
    if "human" in options.agents and (options.sandbox != "bwrap" or options.ray):
        # the person's terminal is served from the bwrap sandbox on this machine
        raise LabcoatError(
            "--agent human runs on this machine in the bwrap sandbox: drop --ray / --sandbox"
        )
    if options.model:
        check_model(options.model, model_args=options.model_args, base_url=options.model_base_url)
    for role, model in (options.model_roles or {}).items():
        check_model(model, f"--model-role {role}={model}")
    prices = load_prices(options.model_cost_config) if options.model_cost_config else {}
    register_prices(prices)
    if options.limits.cost_limit_usd is not None:
        require_price(options.model or NO_MODEL, prices)
    if options.campaign.given and options.ledger is None:
        raise LabcoatError(
            "--budget-usd/--budget-tokens/--budget-gpu-hours keep their ledger in the log "
            f"folder: give a local --log-dir (not {options.budget_dir or options.log_dir})"
        )
    if options.campaign.usd is not None:
        # fail closed: spend that cannot be priced cannot be held to a budget
        for model in _priced_models(options):
            require_price(model, prices, option="--budget-usd")
    if options.campaign.gpu_hours is not None and options.sandbox != "bwrap":
        raise LabcoatError(
            "--budget-gpu-hours counts the GPU time the bwrap sandbox records: drop --sandbox "
            f"{options.sandbox}"
        )
    return prices


def _priced_models(options: RunConfig) -> list[str]:
    models = [options.model] if options.model else []
    return [m for m in [*models, *(options.model_roles or {}).values()] if m != NO_MODEL]


def run_entries(
    target: str, entries: list[TaskEntry], options: RunConfig
) -> tuple[bool, list[TaskResult]]:
    """Run every agent on every entry as one eval set (re-running resumes it).

    Ctrl-C or SIGTERM: Inspect cancels the running samples (their sandboxes are torn
    down) and marks the logs cancelled; this raises `Interrupted`, saying where.
    """
    # the choices code below Inspect's task/solver boundary reads (see run_choices): for
    # the tasks' builds, their samples, and on Ray the launcher's planning
    with using(options.choices):
        return _run_entries(target, entries, options)


def _run_entries(
    target: str, entries: list[TaskEntry], options: RunConfig
) -> tuple[bool, list[TaskResult]]:
    prices = check_run_options(options)
    # a folder whose tasks could not be listed because this machine lacks what it needs
    # (a secret, its environment) cannot run here: not broken, in no mean, no failure
    elsewhere = {e.id: reason_of(e.problem) for e in entries if e.problem}
    broken = [e for e in entries if e.problem and not elsewhere[e.id]]
    runnable = [e for e in entries if not e.problem]
    not_run = [
        TaskResult(e.id, e.family, agent, problem=e.problem)
        if not elsewhere[e.id]
        else TaskResult(
            e.id, e.family, agent, cannot_run_here=1, cannot_run_reasons=[str(elsewhere[e.id])]
        )
        for e in entries
        if e.problem
        for agent in options.agents
    ]
    if not runnable:
        return not broken, not_run
    interrupted = Interrupted(
        f"unfinished samples are marked cancelled in the logs in {options.log_dir}; "
        "run the same command again to finish them"
    )
    if options.ray is not None:
        from labcoat._run._ray._driver import run_on_ray

        try:
            success, results = run_on_ray(target, runnable, options, prices=prices)
        except KeyboardInterrupt:
            raise interrupted from None
        return success and not broken, results + not_run
    return _run_here(target, runnable, options, not_run, broken, interrupted)


def _run_here(
    target: str,
    runnable: list[TaskEntry],
    options: RunConfig,
    not_run: list[TaskResult],
    broken: list[TaskEntry],
    interrupted: Interrupted,
) -> tuple[bool, list[TaskResult]]:
    """The run as one Inspect eval set in this process."""
    tasks = []
    for agent in options.agents:
        tasks += build_tasks(target, runnable, agent, options.sandbox, options.task_args)
    account = _account(options)
    # the same command again resumes: say what the earlier runs left
    resuming = resume_line(options.log_dir, tasks, options.epochs, options.limit)
    if resuming:
        print(f"labcoat: {resuming}", file=sys.stderr, flush=True)
    try:
        # a quiet stop; a second Ctrl-C ends the process (_interrupts.py)
        with guarded(), guarding(LocalBank(account) if account else None):
            success, logs = _eval_set(tasks, options)
            stopped = was_interrupted()
    except (KeyboardInterrupt, asyncio.CancelledError):
        # CancelledError: Ctrl-C as a key of Inspect's full-screen display (a terminal)
        raise interrupted from None
    # Inspect may also return normally from a cancelled run (with fewer logs): the logs
    # on disk say so
    if (
        stopped
        or any(log.status == "cancelled" for log in logs)
        or _cancelled_logs(options.log_dir)
    ):
        raise interrupted
    if len(logs) < len(tasks):
        raise LabcoatError(
            f"Inspect returned logs for {len(logs)} of {len(tasks)} task(s); "
            f"see the logs in {options.log_dir} (`inspect view --log-dir {options.log_dir}`)"
        )
    results = inspected_results(logs, options.inspect)
    if not success and all(log.status == "success" or only_not_run(log) for log in logs):
        success = True  # samples that ran nothing (budget, cannot run here): no failures
    return success and not broken, results + not_run


def _account(options: RunConfig) -> Account | None:
    """The run's account: its ledger is written on every local run, so a budget given on
    a later resume counts what this one spent."""
    if options.ledger is None:
        return None
    return Account(options.campaign, options.ledger, options.launch)


def _cancelled_logs(log_dir: str) -> list[str]:
    """The logs directly in `log_dir` that Inspect marked cancelled (an interrupted run)."""
    found = []
    for info in list_eval_logs(log_dir, recursive=False):
        with contextlib.suppress(Exception):  # a log being written, or not a log
            if read_eval_log(info.name, header_only=True).status == "cancelled":
                found.append(info.name)
    return found


def _eval_set(tasks: list[Any], options: RunConfig) -> tuple[bool, Any]:
    return eval_set(
        tasks,
        log_dir=options.log_dir,
        epochs=options.epochs,
        limit=options.limit,
        max_samples=options.max_samples,
        max_tasks=options.max_tasks,
        display=options.display,  # type: ignore[arg-type]
        retry_attempts=0,
        retry_immediate=False,
        # every sample runs even when some error; the errored ones are retried on re-run
        continue_on_fail=True,
        **inspect_eval_args(options),
    )

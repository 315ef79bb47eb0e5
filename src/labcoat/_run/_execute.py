"""Running Inspect eval sets for labcoat and reporting what they scored."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

from inspect_ai import eval_set
from inspect_ai.log import list_eval_logs, read_eval_log

from labcoat._errors import Interrupted, LabcoatError
from labcoat._run._budget import CampaignBudget
from labcoat._run._budget_bank import Account, LocalBank
from labcoat._run._budget_guard import guarding
from labcoat._run._costs import load_prices, register_prices, require_price
from labcoat._run._inspected import inspected_results
from labcoat._run._interrupts import guarded
from labcoat._run._interrupts import interrupted as was_interrupted
from labcoat._run._ledger import ledger_path
from labcoat._run._logdir import is_remote
from labcoat._run._models import check_model
from labcoat._run._results import TaskResult, only_not_run
from labcoat._run._resume import resume_line
from labcoat._run._tasks import build_tasks
from labcoat._unavailable import reason_of
from labcoat.agents import WITHOUT_MODEL
from labcoat.families import TaskEntry

NO_MODEL = "none/none"


@dataclass
class RunOptions:
    agents: list[str]
    sandbox: str = "bwrap"
    model: str | None = None
    epochs: int | None = None
    log_dir: str = "logs"
    max_samples: int | None = None
    max_tasks: int | None = None
    display: str | None = None
    task_args: dict[str, Any] | None = None
    limits: dict[str, float | int | None] | None = None
    """Per-sample budgets for the agent: time, working, token, cost, message."""
    model_cost_config: str | None = None
    model_roles: dict[str, str] | None = None
    model_timeout: int | None = None
    """Seconds per model-call attempt (Inspect's `attempt_timeout`); a hung call is retried."""
    ray: str | None = None
    """Run on Ray: `local` (a local instance) or a cluster's address (docs/scale.md)."""
    max_connections: int | None = None
    """Connections to each model at once (with `ray`: across the whole cluster)."""
    inspect: bool = True
    """Run `labcoat inspect`'s rule-based detectors on the logs before the tables are made."""
    model_args: dict[str, Any] | None = None
    budget: CampaignBudget = field(default_factory=CampaignBudget)
    """The run's budget as a whole, across resumes (docs/cli.md#budgets)."""
    launch: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    """This command's id in the ledger (what it spent, apart from earlier launches)."""
    budget_dir: str | None = None
    """The folder whose ledger holds the run's spend (default: `log_dir`; `validate` runs
    its parts in sub-folders of one)."""
    limit: int | tuple[int, int] | None = None
    """Inspect's sample limit per task: the first N, or (start, stop) 0-based."""
    generate: dict[str, Any] | None = None
    """Inspect generate config for the model's calls, e.g. {"temperature": 0.2}."""
    model_base_url: str | None = None

    @property
    def ledger(self) -> str | None:
        """The spend ledger of this run (None: remote logs, where no ledger is kept)."""
        folder = self.budget_dir or self.log_dir
        return None if is_remote(folder) else str(ledger_path(folder))


def check_run_options(options: RunOptions) -> dict[str, Any]:
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
    if (options.limits or {}).get("cost") is not None:
        require_price(options.model or NO_MODEL, prices)
    if options.budget.given and options.ledger is None:
        raise LabcoatError(
            "--budget-usd/--budget-tokens/--budget-gpu-hours keep their ledger in the log "
            f"folder: give a local --log-dir (not {options.budget_dir or options.log_dir})"
        )
    if options.budget.usd is not None:
        # fail closed: spend that cannot be priced cannot be held to a budget
        for model in _priced_models(options):
            require_price(model, prices, option="--budget-usd")
    if options.budget.gpu_hours is not None and options.sandbox != "bwrap":
        raise LabcoatError(
            "--budget-gpu-hours counts the GPU time the bwrap sandbox records: drop --sandbox "
            f"{options.sandbox}"
        )
    return prices


def _priced_models(options: RunOptions) -> list[str]:
    models = [options.model] if options.model else []
    return [m for m in [*models, *(options.model_roles or {}).values()] if m != NO_MODEL]


def run_entries(
    target: str, entries: list[TaskEntry], options: RunOptions
) -> tuple[bool, list[TaskResult]]:
    """Run every agent on every entry as one eval set (re-running resumes it).

    Ctrl-C or SIGTERM: Inspect cancels the running samples (their sandboxes are torn
    down) and marks the logs cancelled; this raises `Interrupted`, saying where.
    """
    prices = check_run_options(options)
    limits = {f"{k}_limit": v for k, v in (options.limits or {}).items() if v is not None}
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
            success, results = run_on_ray(target, runnable, options, limits=limits, prices=prices)
        except KeyboardInterrupt:
            raise interrupted from None
        return success and not broken, results + not_run
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
            success, logs = _eval_set(tasks, options, limits)
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


def _account(options: RunOptions) -> Account | None:
    """The run's account: its ledger is written on every local run, so a budget given on
    a later resume counts what this one spent."""
    if options.ledger is None:
        return None
    return Account(options.budget, options.ledger, options.launch)


def _cancelled_logs(log_dir: str) -> list[str]:
    """The logs directly in `log_dir` that Inspect marked cancelled (an interrupted run)."""
    found = []
    for info in list_eval_logs(log_dir, recursive=False):
        with contextlib.suppress(Exception):  # a log being written, or not a log
            if read_eval_log(info.name, header_only=True).status == "cancelled":
                found.append(info.name)
    return found


def _eval_set(tasks: list[Any], options: RunOptions, limits: dict[str, Any]) -> tuple[bool, Any]:
    return eval_set(
        tasks,
        log_dir=options.log_dir,
        model=options.model or NO_MODEL,
        model_args=options.model_args or {},
        model_base_url=options.model_base_url,
        epochs=options.epochs,
        limit=options.limit,
        max_samples=options.max_samples,
        max_tasks=options.max_tasks,
        model_roles=options.model_roles or None,
        max_connections=options.max_connections,
        display=options.display,  # type: ignore[arg-type]
        retry_attempts=0,
        retry_immediate=False,
        # every sample runs even when some error; the errored ones are retried on re-run
        continue_on_fail=True,
        attempt_timeout=options.model_timeout,
        **(options.generate or {}),
        **limits,
    )

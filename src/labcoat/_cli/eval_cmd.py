"""`labcoat eval TARGET --agent ...`: run tasks through Inspect and print their scores."""

from __future__ import annotations

import json
import sys

import click

from labcoat._cli._budget_note import print_budget
from labcoat._cli._help import SectionedCommand
from labcoat._cli._human_run import run_for_person, wants_foreground
from labcoat._cli._options import (
    COUNT,
    agent_limits,
    budget_options,
    campaign_budget,
    campaign_options,
    inspect_elsewhere,
    inspect_options,
    parse_model_args,
    parse_model_roles,
    parse_task_args,
    read_secrets,
    run_choices,
    run_options,
    secrets_option,
    selection_options,
)
from labcoat._cli._options import ray_address as ray_address_of
from labcoat._cli._output import stdout_to_stderr
from labcoat._cli._run_size import check_run_samples
from labcoat._cli._tables import print_results
from labcoat._errors import LabcoatError
from labcoat._run._config import RunConfig
from labcoat._run._execute import check_run_options, run_entries
from labcoat._run._logdir import log_dir_lock
from labcoat._run._results import run_exit_code
from labcoat._run._tasks import eval_log_dir, selected_entries, sole_family
from labcoat._util.run_choices import using
from labcoat.agents import AGENT_NAMES, check_agent_name, works_in_sandbox
from labcoat.families import EvalChoices, eval_task_args

# --help: what most runs set first, then each kind of option together
SECTIONS = (
    ("Common options", ("agent", "model", "task_ids", "family", "limit", "epochs", "log_dir")),
    (
        "Model",
        (
            "model_roles",
            "model_args",
            "model_base_url",
            "temperature",
            "max_connections",
            "model_timeout",
            "model_cost_config",
        ),
    ),
    (
        "Limits per sample",
        ("time_limit", "working_limit", "token_limit", "cost_limit", "message_limit"),
    ),
    ("Budget of the whole run", ("budget_usd", "budget_tokens", "budget_gpu_hours")),
    (
        "Tasks",
        (
            "task_arg",
            "secrets_file",
            "task_python",
            "any_gpu_model",
            "idea_hint",
            "search_provider",
        ),
    ),
    (
        "Running and output",
        ("sandbox", "max_samples", "ray_address", "display", "no_inspect", "as_json"),
    ),
)


@click.command("eval", cls=SectionedCommand, sections=SECTIONS)
@click.argument("target")
@selection_options
@click.option(
    "--agent",
    default="research",
    show_default=True,
    metavar="AGENT",
    help=f"One of: {', '.join(AGENT_NAMES)}.",
)
@click.option("--model", metavar="MODEL", help="Inspect model, e.g. openai/gpt-5 (research agent).")
@click.option(
    "--model-role",
    "model_roles",
    multiple=True,
    metavar="ROLE=MODEL",
    help="A model for a role, e.g. grader=openai/gpt-5-mini (PaperBench's llm judge).",
)
@click.option(
    "-M",
    "--model-arg",
    "model_args",
    multiple=True,
    metavar="KEY=VALUE",
    help="An argument of the model's provider, e.g. -M script=turns.yaml (labcoat/scripted).",
)
@click.option("--epochs", type=COUNT, metavar="N", help="Runs per task.")
@click.option(
    "--max-connections",
    type=int,
    metavar="N",
    help="Connections to each model at once (default: Inspect's); with --ray, across the "
    "whole cluster (default 10).",
)
@click.option(
    "-T",
    "--task-arg",
    "task_arg",
    multiple=True,
    metavar="KEY=VALUE",
    help=(
        "A parameter of the family's task (needs --family unless TARGET holds one family), "
        "e.g. -T with_paper=false."
    ),
)
@inspect_options
@inspect_elsewhere
@run_options
@secrets_option
@budget_options
@campaign_options
@click.option(
    "--idea-hint",
    is_flag=True,
    help="ResearchGym: add each task's idea_hint.txt to the instructions (ablation).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def command(
    target: str,
    task_ids: tuple[str, ...],
    family: str | None,
    task_python: str | None,
    any_gpu_model: bool,
    agent: str,
    model: str | None,
    model_roles: tuple[str, ...],
    model_args: tuple[str, ...],
    epochs: int | None,
    max_connections: int | None,
    task_arg: tuple[str, ...],
    sandbox: str,
    log_dir: str | None,
    max_samples: int | None,
    ray_address: str | None,
    secrets_file: str | None,
    no_inspect: bool,
    time_limit: int | None,
    working_limit: int | None,
    token_limit: int | None,
    cost_limit: float | None,
    message_limit: int | None,
    model_timeout: int,
    model_cost_config: str | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    budget_gpu_hours: float | None,
    search_provider: str | None,
    idea_hint: bool,
    as_json: bool,
    limit: int | tuple[int, int] | None,
    display: str | None,
    temperature: float | None,
    model_base_url: str | None,
) -> None:
    """Run agents on the tasks in TARGET; re-running the same command resumes it."""
    check_agent_name(agent)
    if limit is not None and ray_address is not None:
        raise LabcoatError("--limit does not work with --ray yet: choose the samples with --task")
    generate = {"temperature": temperature} if temperature is not None else {}
    check_run_samples(1, epochs or 1)  # before anything is discovered: --epochs 10**9
    choices = run_choices(task_python, any_gpu_model, search_provider)
    # discovery checks a task's GPUs (--any-gpu-model) and builds its environments
    with using(choices):
        # secrets before anything is discovered: a family's get_tasks() may need one
        read_secrets(secrets_file)
        if task_arg and family is None:
            family = sole_family(target)  # -T is one family's: a one-family target says which
        # each family's own arguments for these choices (its FamilySpec's eval_args)
        chosen = EvalChoices(works_in_sandbox(agent), idea_hint, secrets_file)
        family_args = eval_task_args(chosen, parse_task_args(task_arg, family))
        entries = selected_entries(target, list(task_ids), family, family_args, runnable=True)
        check_run_samples(sum(e.samples for e in entries if not e.problem), epochs or 1)
        options = RunConfig(
            agents=[agent],
            sandbox=sandbox,
            model=model,
            epochs=epochs,
            log_dir=log_dir
            or eval_log_dir(
                target,
                agent,
                model,
                family=family,
                tasks=sorted(task_ids),
                task_args=family_args,
                epochs=epochs,
                model_args=model_args,
                model_roles=model_roles,
                # each is another eval set: Inspect refuses another's logs, and a folder
                # finished under --limit would resume as finished
                limit=limit,
                generate=generate,
                model_base_url=model_base_url,
            ),
            max_samples=max_samples,
            inspect=not no_inspect,
            limits=agent_limits(time_limit, working_limit, token_limit, cost_limit, message_limit),
            choices=choices,
            model_cost_config=model_cost_config,
            model_timeout=model_timeout,
            task_args=family_args,
            model_roles=parse_model_roles(model_roles),
            ray=ray_address_of(ray_address),
            max_connections=max_connections,
            model_args=parse_model_args(model_args),
            campaign=campaign_budget(budget_usd, budget_tokens, budget_gpu_hours),
            limit=limit,
            display=display,
            generate=generate,
            model_base_url=model_base_url,
        )
    check_run_options(options)  # before the log folder is made
    if wants_foreground(agent):
        sys.exit(run_for_person(sys.argv[1:], options.log_dir))
    with log_dir_lock(options.log_dir), stdout_to_stderr(as_json):
        success, results = run_entries(target, entries, options)
    if as_json:
        click.echo(json.dumps([r.to_json() for r in results], indent=2))
    else:
        print_results(results, f"labcoat eval {target} (logs: {options.log_dir})")
    print_budget(options, results, err=as_json)
    sys.exit(run_exit_code(success, results))

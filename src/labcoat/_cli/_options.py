"""Options shared by the commands that run tasks."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import click
import yaml

from labcoat._errors import LabcoatError
from labcoat._run._budget import CampaignBudget
from labcoat._run._config import AgentLimits
from labcoat._util.run_choices import RunChoices
from labcoat.agents.research._model import DEFAULT_MODEL_TIMEOUT
from labcoat.families import family_module, family_names
from labcoat.families._params import check_task_args
from labcoat.families._sandbox import SANDBOX_KINDS
from labcoat.sandbox import task_python_paths

COUNT = click.IntRange(min=1)
"""Counts and whole-second limits: 0 would hang (max samples) or stop at once (limits)."""


class PositiveNumber(click.FloatRange):
    """A finite number > 0 (click's FloatRange lets nan and inf through)."""

    name = "positive number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


POSITIVE = PositiveNumber(min=0, min_open=True)


def selection_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--task",
        "task_ids",
        multiple=True,
        metavar="ID",
        help="Run only this task (repeatable); see `labcoat list`.",
    )(fn)
    fn = click.option("--family", type=click.Choice(family_names()), help="Only this family.")(fn)
    fn = click.option(
        "--any-gpu-model",
        is_flag=True,
        help="Run a task that asks for a GPU model this machine lacks on the GPUs it has.",
    )(fn)
    fn = click.option(
        "--python",
        "task_python",
        metavar="PATH",
        callback=_task_python,
        help="An interpreter or venv whose packages every task environment sees (torch "
        "preinstalled on an air-gapped machine); see docs/gpu.md.",
    )(fn)
    return fn


def _task_python(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            task_python_paths(value)  # a bad interpreter is one line now, not mid-run
        except LabcoatError as ex:
            raise click.BadParameter(str(ex), ctx=ctx, param=param) from None
    return value


def run_choices(
    task_python: str | None, any_gpu_model: bool, search_provider: str | None = None
) -> RunChoices:
    """The run's `--python`, `--any-gpu-model` and `--search-provider`; each not given
    is the environment's default (LABCOAT_TASK_PYTHON, ...), read here, once."""
    if search_provider:
        from labcoat.agents.research._tools.web import SearchProvider

        try:
            SearchProvider.parse(search_provider)  # a bad spec is one line now, not mid-run
        except LabcoatError:
            raise LabcoatError(
                f"--search-provider {search_provider!r}: expected searxng:URL or tavily"
            ) from None
    defaults = RunChoices.from_env()
    return RunChoices(
        task_python=task_python or defaults.task_python,
        any_gpu_model=any_gpu_model or defaults.any_gpu_model,
        search_provider=search_provider or defaults.search_provider,
    )


def run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--sandbox",
        type=click.Choice(SANDBOX_KINDS),
        default="bwrap",
        show_default=True,
        help="Where agents run (docker: experimental, weaker than bwrap; docs/sandbox.md).",
    )(fn)
    fn = click.option("--log-dir", metavar="DIR", help="Where the .eval logs go.")(fn)
    fn = click.option(
        "--max-samples", type=COUNT, metavar="N", help="Samples run at once (default: Inspect's)."
    )(fn)
    fn = click.option(
        "--ray",
        "ray_address",
        is_flag=False,
        flag_value="local",
        default=None,
        metavar="[ADDRESS]",
        help="Run every sample as a Ray task: on the cluster at ADDRESS (HOST:PORT, "
        "ray://HOST:PORT, auto), or a local Ray instance without one. See docs/scale.md.",
    )(fn)
    fn = click.option(
        "--no-inspect",
        is_flag=True,
        help="Skip the integrity inspection of the runs' logs (`labcoat inspect`) at the end.",
    )(fn)
    return fn


def ray_address(value: str | None) -> str | None:
    """The checked `--ray` value (None: run locally, without Ray)."""
    if value is None:
        return None
    from labcoat._run._ray._cluster import check_address

    return check_address(value)


def secrets_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--secrets",
        "secrets_file",
        metavar="FILE",
        type=click.Path(exists=True, dir_okay=False),
        help="A .env file with the environment variables tasks require (RE-Bench families' "
        "required_environment_variables); else they come from the environment.",
    )(fn)


def read_secrets(secrets_file: str | None) -> None:
    """Give the secrets file to this process (discovery, checks): call it before any
    target is discovered, as a family's get_tasks() may need a secret."""
    if secrets_file:
        from labcoat.families.rebench import use_secrets_file

        use_secrets_file(secrets_file)


def budget_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Per-sample limits of the research agent (they replace the task's own time budget),
    and its web search."""
    fn = click.option(
        "--search-provider",
        metavar="SPEC",
        help="Web search for tasks that allow the network: searxng:URL or tavily.",
    )(fn)
    fn = click.option(
        "--model-cost-config",
        metavar="FILE",
        help="Model prices ($ per million tokens), YAML or JSON.",
    )(fn)
    fn = click.option(
        "--model-timeout",
        type=click.IntRange(min=1),
        default=DEFAULT_MODEL_TIMEOUT,
        show_default=True,
        metavar="SECONDS",
        help="Longest a model call may take; a call that hangs is abandoned and retried "
        "(the wait is not working time).",
    )(fn)
    fn = click.option("--message-limit", type=COUNT, metavar="N", help="Messages per sample.")(fn)
    fn = click.option(
        "--cost-limit",
        type=POSITIVE,
        metavar="DOLLARS",
        help="Model cost per sample; refuses to start if a price is unknown.",
    )(fn)
    fn = click.option("--token-limit", type=COUNT, metavar="N", help="Tokens per sample.")(fn)
    fn = click.option(
        "--working-limit",
        type=COUNT,
        metavar="SECONDS",
        help="Working time per sample (excludes waiting on retries).",
    )(fn)
    fn = click.option(
        "--time-limit",
        type=COUNT,
        metavar="SECONDS",
        help="Wall time per sample (default: each task's own budget).",
    )(fn)
    return fn


def agent_limits(
    time_limit: int | None,
    working_limit: int | None,
    token_limit: int | None,
    cost_limit: float | None,
    message_limit: int | None,
) -> AgentLimits:
    """`budget_options`' per-sample limits, as the run's config holds them."""
    return AgentLimits(
        time_limit_s=time_limit,
        working_limit_s=working_limit,
        token_limit=token_limit,
        cost_limit_usd=cost_limit,
        message_limit=message_limit,
    )


def campaign_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The run's budget as a whole (every sample, every resume of its log folder)."""
    fn = click.option(
        "--budget-gpu-hours",
        type=POSITIVE,
        metavar="HOURS",
        help="GPU-hours for the whole run (across resumes); see docs/cli.md#budgets.",
    )(fn)
    fn = click.option(
        "--budget-tokens",
        type=COUNT,
        metavar="N",
        help="Model tokens for the whole run (across resumes).",
    )(fn)
    fn = click.option(
        "--budget-usd",
        type=POSITIVE,
        metavar="DOLLARS",
        help="Model cost for the whole run (across resumes); refuses to start if a price "
        "is unknown.",
    )(fn)
    return fn


def campaign_budget(
    usd: float | None, tokens: int | None, gpu_hours: float | None
) -> CampaignBudget:
    return CampaignBudget(usd=usd, tokens=tokens, gpu_hours=gpu_hours)


def parse_task_args(pairs: tuple[str, ...], family: str | None) -> dict[str, dict[str, Any]]:
    """`-T key=value` pairs (YAML values) as task arguments of one family."""
    if not pairs:
        return {}
    if family is None:
        raise click.UsageError(
            "-T/--task-arg needs --family: the target holds tasks of several families, "
            "whose parameters differ"
        )
    task_fn = getattr(family_module(family), family)
    return {family: check_task_args(task_fn, family, _key_values("-T", pairs))}


def _key_values(flag: str, pairs: tuple[str, ...]) -> dict[str, Any]:
    """`FLAG key=value` pairs as a dict of YAML values."""
    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"{flag} {pair!r}: expected KEY=VALUE")
        args[key.strip()] = _yaml_value(f"{flag} {pair}", value)
    return args


def _yaml_value(where: str, value: str) -> Any:
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as ex:
        problem = " ".join(str(getattr(ex, "problem", None) or ex).split())
        raise click.UsageError(f"{where}: not a YAML value ({problem})") from None


def parse_model_args(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`-M key=value` pairs (YAML values) for the model's provider."""
    return _key_values("-M", pairs)


def parse_model_roles(pairs: tuple[str, ...]) -> dict[str, str]:
    roles = {}
    for pair in pairs:
        role, sep, model = pair.partition("=")
        if not sep or not role.strip() or not model.strip():
            raise click.UsageError(f"--model-role {pair!r}: expected ROLE=MODEL")
        roles[role.strip()] = model.strip()
    return roles


class SampleLimit(click.ParamType):
    """Inspect's `--limit`: the first N samples of each task, or samples A-B (from 1)."""

    name = "N|A-B"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (int, tuple)):
            return value
        text = str(value).strip()
        first, dash, last = text.partition("-")
        try:
            if not dash:
                count = int(text)
                if count >= 1:
                    return count
            elif 1 <= int(first) <= int(last):
                return (int(first) - 1, int(last))  # Inspect's (start, stop), 0-based
        except ValueError:
            pass
        self.fail(f"{value!r}: expected a count (e.g. 10) or a range A-B (e.g. 10-20)", param, ctx)


DISPLAYS = ("full", "conversation", "rich", "plain", "log", "none")
"""Inspect's display types (`inspect eval --display`)."""


def inspect_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options `inspect eval` has, with its names and meanings, carried to Inspect."""
    fn = click.option(
        "--model-base-url",
        metavar="URL",
        help="Base URL of the model's API (an OpenAI-compatible server: http://HOST:PORT/v1); "
        "checked to answer before anything starts.",
    )(fn)
    fn = click.option(
        "--temperature",
        type=click.FloatRange(min=0),
        metavar="T",
        help="Sampling temperature of the model's calls (Inspect's generate config).",
    )(fn)
    fn = click.option(
        "--display",
        type=click.Choice(DISPLAYS),
        help="Inspect's display while the run goes (default: full).",
    )(fn)
    fn = click.option(
        "--limit",
        type=SampleLimit(),
        metavar="N|A-B",
        help="Run only the first N samples of each family's task, or samples A-B (from 1).",
    )(fn)
    return fn


# Inspect options labcoat does not take, and what to use instead
INSPECT_ELSEWHERE: dict[str, tuple[bool, str]] = {
    "--sample-id": (False, "a sample is a task: choose it with --task ID (see `labcoat list`)"),
    "--task-config": (False, "give task parameters as -T KEY=VALUE"),
    "--model-config": (False, "give model arguments as -M KEY=VALUE"),
    "--attempt-timeout": (False, "use --model-timeout SECONDS"),
    "--max-sandboxes": (False, "each sample has one sandbox: use --max-samples N"),
    "--retry-attempts": (False, "re-run the same command: it resumes the unfinished samples"),
    "--fail-on-error": (False, "every sample runs even when some error; a re-run retries them"),
    "--no-fail-on-error": (True, "every sample runs even when some error; a re-run retries them"),
}


def inspect_elsewhere(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Hidden options named as Inspect names them, each failing with where it went."""
    for name, (flag, hint) in INSPECT_ELSEWHERE.items():
        fn = click.option(
            name,
            is_flag=flag,
            hidden=True,
            expose_value=False,
            callback=_elsewhere(name, hint),
        )(fn)
    return fn


def _elsewhere(name: str, hint: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def fail(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value:
            raise click.UsageError(f"{name} is Inspect's; labcoat has no such option: {hint}")

    return fail

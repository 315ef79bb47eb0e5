"""One run's configuration: every choice `labcoat eval` / `validate` takes, typed, once.

The CLI builds a `RunConfig`; the local runner (`_execute.py`) and Ray's nodes (`RunSpec`
holds it whole) read it; `inspect_eval_args` turns it into Inspect's `eval`/`eval_set`
keywords for both. The choices that code below Inspect's task and solver boundary acts
on (`--python`, `--any-gpu-model`, `--search-provider`) are its `choices`, set once for
the run by the runner (see `labcoat._util.run_choices`).

The four things once all called "budget" each have their own name:
- `AgentLimits` (`RunConfig.limits`): what one sample's agent may use (time, tokens, ...);
- `CampaignBudget` (`RunConfig.campaign`): what the whole run may spend, across resumes;
- a scorer's scoring time (`labcoat.grading.scoring_deadline`) and how much PaperBench's
  judge reads (`ReadingLimits`), which belong to the families that score.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from labcoat._run._budget import CampaignBudget
from labcoat._run._ledger import ledger_path
from labcoat._run._logdir import is_remote
from labcoat._util.inspect_names import NO_MODEL
from labcoat._util.run_choices import RunChoices


@dataclass(frozen=True)
class AgentLimits:
    """Per-sample limits of the agent (None: the task's own, or none)."""

    time_limit_s: int | None = None
    """Wall time per sample (default: the task's own time budget)."""
    working_limit_s: int | None = None
    """Working time per sample (waiting on retries excluded)."""
    token_limit: int | None = None
    cost_limit_usd: float | None = None
    """Model cost per sample; needs a known price for the model."""
    message_limit: int | None = None

    def inspect_args(self) -> dict[str, float | int]:
        """Inspect's per-sample limit keywords, only those given (e.g. {"time_limit": 60})."""
        given = {
            "time_limit": self.time_limit_s,
            "working_limit": self.working_limit_s,
            "token_limit": self.token_limit,
            "cost_limit": self.cost_limit_usd,
            "message_limit": self.message_limit,
        }
        return {k: v for k, v in given.items() if v is not None}


@dataclass(frozen=True)
class RunConfig:
    """Everything one `labcoat eval`/`validate` run chose (frozen: `dataclasses.replace`
    makes a part's variant, as `validate` does per part)."""

    agents: list[str]
    sandbox: str = "bwrap"
    model: str | None = None
    epochs: int | None = None
    log_dir: str = "logs"
    max_samples: int | None = None
    max_tasks: int | None = None
    display: str | None = None
    task_args: dict[str, Any] | None = None
    limits: AgentLimits = field(default_factory=AgentLimits)
    """What one sample's agent may use."""
    choices: RunChoices = field(default_factory=RunChoices)
    """`--python`, `--any-gpu-model`, `--search-provider`: read below Inspect's task and
    solver boundary, so set for the run's duration (`labcoat._util.run_choices.using`)."""
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
    campaign: CampaignBudget = field(default_factory=CampaignBudget)
    """What the run as a whole may spend, across resumes (docs/cli.md#budgets)."""
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

    @property
    def inspect_model(self) -> str:
        """The model Inspect is given (a placeholder when the agents call none)."""
        return self.model or NO_MODEL


def inspect_eval_args(config: RunConfig) -> dict[str, Any]:
    """The keywords of Inspect's `eval`/`eval_set` that the run's choices decide, the same
    on both call sites (the local eval set, a Ray node's one sample); each site adds its
    own (log folder, epochs, retries, sample filter)."""
    return {
        "model": config.inspect_model,
        "model_args": config.model_args or {},
        "model_base_url": config.model_base_url,
        "model_roles": config.model_roles or None,
        "max_connections": config.max_connections,
        "attempt_timeout": config.model_timeout,
        **(config.generate or {}),
        **config.limits.inspect_args(),
    }

"""What the launcher sends every node: how to run a sample the way a local run would.

Its own module so that the node's parts (the worker, the cluster model slots) read it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ModelCost

from labcoat._run._config import RunConfig, inspect_eval_args


@dataclass(frozen=True)
class RunSpec:
    """Everything a node needs to run a sample the way the launcher would: the run's
    configuration whole, and what the launcher decided for this launch."""

    config: RunConfig
    """The run's choices, as the CLI built them (pickled to every node)."""
    target: str
    """The target as the nodes find it (local paths absolute)."""
    prices: dict[str, ModelCost] = field(default_factory=dict)
    max_connections: int | None = None
    """Connections to each model across the whole cluster (None: no model calls)."""
    coordinator: Any = None
    """The run's coordinator actor (model slots, progress), or None."""
    launch: str = ""
    """This launch's id: attempt markers carry it."""
    keeps_account: bool = False
    """Whether the coordinator keeps the run's campaign account (samples ask it to start
    and report their spend to it)."""

    @property
    def models(self) -> set[str]:
        """The models the run's samples call (the placeholder of model-less agents not)."""
        config = self.config
        return {config.inspect_model, *(config.model_roles or {}).values()} - {"none/none"}

    def eval_args(self) -> dict[str, Any]:
        """Inspect's keywords for a node's eval, as the local eval set gets them; model
        connections are the cluster's (`max_connections`)."""
        return inspect_eval_args(self.config) | {"max_connections": self.max_connections}

"""What the launcher sends every node: how to run a sample the way a local run would.

Its own module so that the node's parts (the worker, the cluster model slots) read it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ModelCost


@dataclass(frozen=True)
class RunSpec:
    """Everything a node needs to run a sample the way the launcher would."""

    target: str
    sandbox: str
    model: str
    model_roles: dict[str, str] | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    task_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    limits: dict[str, float | int] = field(default_factory=dict)
    """Inspect's per-sample limits, e.g. {"time_limit": 3600}."""
    prices: dict[str, ModelCost] = field(default_factory=dict)
    max_connections: int | None = None
    model_timeout: int | None = None
    """Seconds per model-call attempt (Inspect's `attempt_timeout`)."""
    model_base_url: str | None = None
    generate: dict[str, Any] = field(default_factory=dict)
    """Inspect generate config for the model's calls (`--temperature`)."""
    coordinator: Any = None
    """The run's coordinator actor (model slots, progress), or None."""
    launch: str = ""
    """This launch's id: attempt markers carry it."""
    budget: bool = False
    """Whether the coordinator keeps the run's budget account (samples ask it to start and
    report their spend to it)."""

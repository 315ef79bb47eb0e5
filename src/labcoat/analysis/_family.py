"""What the analysis reads from a sample, per benchmark family.

Each family module subclasses `Family` and overrides only what its logs carry; the
generic base reads the shared score shape (`labcoat.families._score`). Keep family
knowledge in its own module so it can follow that family's scorer as it changes.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.scorer import Score

from labcoat._util.inspect_names import NO_MODEL

Row = dict[str, Any]

# curve rules: how a run's intermediate scores become "the score at time t"
BEST = "best"  # the best score so far (RE-Bench's default: the best attempt counts)
LAST = "last"  # the latest score so far


def label_of(model: str, agent: str, variant: str) -> str:
    """Who ran: the model for the research agent, the agent otherwise (+ the variant)."""
    if agent == "research" or not agent:
        base = model
    elif model and model != NO_MODEL:
        base = f"{agent} ({model})"
    else:
        base = agent
    return f"{base} [{variant}]" if variant else base


def num(value: Any) -> float | None:
    """A finite float, or None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    return None


class Family:
    """The generic reading: score value `raw`, `normalized`, `weight`; nothing else."""

    name = ""

    def variant(self, log: EvalLog) -> str:
        """Words that set this log's runs apart from the same model's other runs."""
        return ""

    def run_fields(self, sample: EvalSample, score: Score) -> Row:
        """Extra per-sample figures: completion_rate, improved, improvement, self_reported."""
        return {}

    def parts(self, sample: EvalSample, score: Score) -> list[Row]:
        """Sub-task rows (kind, id, raw, normalized, weight, valid, ...)."""
        return []

    def score_points(self, sample: EvalSample, score: Score | None) -> list[Row]:
        """Intermediate scores recorded during the run (elapsed, tokens, normalized, ...)."""
        return []

    def curve_rule(self, sample: EvalSample, score: Score | None) -> str:
        return BEST

    def weight(self, sample: EvalSample) -> float:
        """A sample's weight in its run when it has no score to say so (errored)."""
        return 1.0

    def task_of(self, sample_id: str) -> str:
        """The task of a sample the log lacks (no metadata to read it from)."""
        return sample_id

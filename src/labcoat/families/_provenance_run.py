"""Provenance read from the running sample rather than its metadata: the models the
provider reported for its calls, the limits its agent applied itself, and the limits of
grader sandboxes a family opens without a sandbox of the sample's own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from labcoat._util.store_keys import AGENT_BUDGET_KEY

SCORING_SPANS = frozenset({"scorers", "scorer"})
"""Inspect's span types around scoring: model calls after one are a judge's."""


def reported_models(events: Iterable[Any]) -> tuple[dict[str, int], dict[str, int]]:
    """The models the provider reported (`ModelOutput.model`) for the sample's calls, with
    counts: (the agent's calls, the calls made while scoring, e.g. an LLM judge's).

    A provider may answer with another snapshot than the one asked for, and may change it
    mid-run; the last output's model alone would hide that. A call that failed before the
    provider answered reports nothing and is left out."""
    from inspect_ai.event import ModelEvent, SpanBeginEvent

    agent: Counter[str] = Counter()
    scoring: Counter[str] = Counter()
    counts = agent
    for event in events:
        if isinstance(event, SpanBeginEvent) and (event.type or event.name) in SCORING_SPANS:
            counts = scoring  # events are in order: everything from here on is grading
        elif isinstance(event, ModelEvent) and event.output.model:
            counts[event.output.model] += 1
    return dict(agent.most_common()), dict(scoring.most_common())


def sample_events() -> list[Any]:
    from inspect_ai.log import transcript

    return list(transcript().events)


def agent_budget() -> dict[str, Any] | None:
    """The research agent's limits, as it recorded them at its start; None for an agent
    that records none (another agent, or no agent: a scripted or oracle run)."""
    from inspect_ai.util import store

    budget = store().get(AGENT_BUDGET_KEY)
    return dict(budget) if isinstance(budget, dict) else None

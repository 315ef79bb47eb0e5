"""Token usage a provider reports, checked before Inspect counts it.

A misconfigured or buggy OpenAI-compatible server can report usage that is negative
(`prompt_tokens: -7000000`), inconsistent (a total below input plus output) or absurd
(more tokens than any context window). Counted as reported, it drives the run's token
total and cost below zero and the token and cost limits never fire. Such usage is
treated as missing: it is taken off the response before Inspect records it, so the
research agent counts the call's tokens offline instead, as for a provider that
reports no usage at all; what was reported is kept in the response's metadata.
"""

from __future__ import annotations

import functools
from typing import Any

from inspect_ai.model import Model, ModelOutput, ModelUsage

MAX_PLAUSIBLE_TOKENS = 100_000_000
"""Tokens one call can't report in any field: ten times the largest context window."""

DISCARDED_KEY = "labcoat:discarded_usage"
"""Where a response's metadata keeps the usage taken off it, and why."""

_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "input_tokens_cache_write",
    "input_tokens_cache_read",
    "reasoning_tokens",
)


def implausible(usage: ModelUsage) -> str | None:
    """Why this usage can't be counted as reported (None: it can)."""
    for name in _FIELDS:
        value = getattr(usage, name)
        if value is None:
            continue
        if value < 0:
            return f"{name} is negative ({value})"
        if value > MAX_PLAUSIBLE_TOKENS:
            return f"{name} is absurd ({value})"
    if usage.total_tokens < usage.input_tokens + usage.output_tokens:
        return (
            f"total_tokens ({usage.total_tokens}) is less than input_tokens plus "
            f"output_tokens ({usage.input_tokens + usage.output_tokens})"
        )
    if usage.total_cost is not None and usage.total_cost < 0:
        return f"total_cost is negative ({usage.total_cost})"
    return None


def discard_implausible(output: ModelOutput) -> None:
    """Take implausible usage off a response, keeping it and the reason in its metadata."""
    if output.usage is None:
        return
    reason = implausible(output.usage)
    if reason is None:
        return
    reported = output.usage.model_dump(exclude_none=True)
    output.usage = None
    output.metadata = {**(output.metadata or {}), DISCARDED_KEY: {"reason": reason, **reported}}


def discarded(output: ModelOutput) -> dict[str, Any] | None:
    """The usage taken off this response, and why (None: none was)."""
    return (output.metadata or {}).get(DISCARDED_KEY)


def guard_usage(model: Model) -> None:
    """Check every response of this model's provider before Inspect records its usage.

    Inspect records a response's usage inside `Model.generate`, before the caller sees
    it, and has no hook in between: so the provider's own `generate` is wrapped, once
    per model (Inspect keeps one `Model` per name, its provider with it).
    """
    api = model.api
    if getattr(api, "_labcoat_usage_guarded", False):
        return
    generate = api.generate

    @functools.wraps(generate)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        result = await generate(*args, **kwargs)
        output = result[0] if isinstance(result, tuple) else result
        if isinstance(output, ModelOutput):
            discard_implausible(output)
        return result

    api.generate = checked  # type: ignore[method-assign]
    api._labcoat_usage_guarded = True  # type: ignore[attr-defined]

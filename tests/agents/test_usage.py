"""Which reported token usage labcoat counts as reported, and which it counts itself."""

from __future__ import annotations

import pytest
from inspect_ai.model import ModelOutput, ModelUsage

from labcoat.agents.research._usage import (
    MAX_PLAUSIBLE_TOKENS,
    discard_implausible,
    discarded,
    implausible,
)


def usage(input: int, output: int, total: int | None = None, **more: int) -> ModelUsage:
    total = input + output if total is None else total
    return ModelUsage(input_tokens=input, output_tokens=output, total_tokens=total, **more)


@pytest.mark.parametrize(
    "good",
    [
        usage(1000, 20),
        usage(0, 0),
        usage(800, 20, 1020, input_tokens_cache_read=200),  # OpenAI: cached in the total
        usage(800, 20, 1120, input_tokens_cache_write=100, input_tokens_cache_read=200),
        usage(MAX_PLAUSIBLE_TOKENS - 20, 20),
    ],
)
def test_plausible_usage_is_counted_as_reported(good: ModelUsage) -> None:
    assert implausible(good) is None


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (usage(-7_000_000, 350), "input_tokens is negative (-7000000)"),
        (usage(1000, -1), "output_tokens is negative"),
        (usage(1000, 20, -5), "total_tokens is negative"),
        (usage(1000, 20, input_tokens_cache_read=-3), "input_tokens_cache_read is negative"),
        (usage(1000, 20, 0), "total_tokens (0) is less than input_tokens plus output_tokens"),
        (usage(1000, 20, 1019), "is less than"),
        (usage(10**12, 20), "input_tokens is absurd"),
        (usage(10, MAX_PLAUSIBLE_TOKENS + 1), "output_tokens is absurd"),
    ],
)
def test_negative_inconsistent_or_absurd_usage_is_not(bad: ModelUsage, reason: str) -> None:
    found = implausible(bad)
    assert found is not None and reason in found


def test_discarding_keeps_what_was_reported_and_why() -> None:
    output = ModelOutput.from_content("m", "hi")
    output.usage = usage(-7_000_000, 350, -6_999_650)
    output.metadata = {"other": 1}
    discard_implausible(output)
    assert output.usage is None
    assert output.metadata["other"] == 1
    kept = discarded(output)
    assert kept is not None
    assert kept["input_tokens"] == -7_000_000 and "negative" in kept["reason"]


def test_plausible_usage_stays_on_the_response() -> None:
    output = ModelOutput.from_content("m", "hi")
    output.usage = usage(1000, 20)
    discard_implausible(output)
    assert output.usage == usage(1000, 20)
    assert discarded(output) is None

"""The research agent's model calls, made to survive a long unattended run.

Inspect does most of it: per call, `attempt_timeout` abandons an attempt that hangs,
and its retry loop retries what the provider classifies as transient (429, 5xx,
dropped connections, timed-out attempts) with capped exponential backoff that counts
as waiting, not working time. labcoat adds what Inspect leaves to the caller:

- a response the provider could not parse (HTTP 200 with a truncated or invalid
  body) is retried here, with bounded backoff, a few times in a row at most; a
  persistent one ends the sample with its reason;
- a context-length error that reaches us as an exception (servers that don't use
  OpenAI's `context_length_exceeded` code, e.g. vLLM) becomes a `model_length` stop,
  so the agent's overflow handling runs instead of the sample failing;
- a response without usage gets a local, offline count of its tokens, recorded
  through Inspect's own usage accounting so token and cost limits still hold; so does
  one whose usage is negative, inconsistent or absurd (`_usage.py` takes it off the
  response before Inspect counts it).
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage, GenerateConfig, Model, ModelOutput, get_model
from inspect_ai.tool import Tool, ToolChoice
from inspect_ai.util import LimitExceededError, suspend_working_limit
from inspect_ai.util import store as sample_store

from labcoat.agents.research._tokens import TokenCounter, local_counter
from labcoat.agents.research._usage import discarded, guard_usage

logger = logging.getLogger(__name__)

DEFAULT_MODEL_TIMEOUT = 300
"""Seconds one model call may take before it is abandoned and retried (per attempt)."""

RETRIES_KEY = "labcoat:model_retries"
USAGE_KEY = "labcoat:estimated_usage"

_OVERFLOW_TEXT = re.compile(
    r"context[_ ]length|maximum context|context window|prompt is too long|"
    r"too many (input )?tokens|input is too long|reduce the length of the (messages|prompt)",
    re.IGNORECASE,
)
_warned_models: set[tuple[str, str]] = set()


class ModelCallError(RuntimeError):
    """A model call failed persistently (the sample ends, with this as its reason)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of malformed responses (Inspect retries the rest of transient failures)."""

    attempts: int = 6
    """Attempts of one call in all, before its failure is persistent."""
    initial_wait: float = 1.0
    max_wait: float = 30.0

    def wait(self, retry: int) -> float:
        base = min(self.max_wait, self.initial_wait * 2 ** (retry - 1))
        return base * random.uniform(1.0, 1.25)


def _chain(ex: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = ex
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__
    return seen


class EmptyResponse(Exception):
    """The provider answered, but with no choice to read."""


def is_malformed_response(ex: BaseException) -> bool:
    """A response arrived but could not be read: worth asking again."""
    for error in _chain(ex):
        if isinstance(error, json.JSONDecodeError | UnicodeDecodeError | EmptyResponse):
            return True
        name = type(error).__name__
        # pydantic's ValidationError, openai's APIResponseValidationError, httpx's
        # DecodingError: by name, so no provider package has to be importable
        if name in ("ValidationError", "APIResponseValidationError", "DecodingError"):
            return True
    return False


def context_overflow_message(ex: BaseException) -> str | None:
    """The provider's words, if this error says the request exceeds the context window."""
    for error in _chain(ex):
        status = getattr(error, "status_code", None)
        code = getattr(error, "code", None)
        text = getattr(error, "provider_message", None) or str(error)
        if code == "context_length_exceeded":
            return text
        if status in (400, 413, 422) and _OVERFLOW_TEXT.search(text):
            return text
    return None


def _lacks_usage(output: ModelOutput) -> bool:
    usage = output.usage
    return usage is None or (usage.input_tokens == 0 and usage.output_tokens == 0)


class ModelCalls:
    """Generate with the current model, as the research agent does for every call."""

    def __init__(
        self,
        timeout: int,
        retry: RetryPolicy | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.config = GenerateConfig(attempt_timeout=timeout)
        self.retry = retry or RetryPolicy()
        self.counter = counter or local_counter()

    async def generate(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Tool],
        tool_choice: ToolChoice | None = None,
    ) -> ModelOutput:
        model = get_model()
        guard_usage(model)
        failures = 0
        while True:
            try:
                output = await model.generate(
                    messages, list(tools), tool_choice=tool_choice, config=self.config
                )
                if not output.choices:  # HTTP 200 with `choices: []`: nothing to read
                    raise EmptyResponse(f"{model.name} answered with no choices")
                break
            except LimitExceededError:
                raise
            except Exception as ex:
                overflow = context_overflow_message(ex)
                if overflow is not None:
                    transcript().info({"context_overflow": overflow}, source="labcoat.model")
                    return ModelOutput.from_content(model.name, overflow, "model_length")
                if not is_malformed_response(ex):
                    raise  # Inspect already retried it if it was transient
                failures += 1
                if failures >= self.retry.attempts:
                    raise ModelCallError(
                        f"the model's response could not be read {failures} times in a row "
                        f"(last: {ex!r}); giving up on this call"
                    ) from ex
                await self._back_off(ex, failures)
        if _lacks_usage(output) and output.stop_reason != "model_length":
            self._count_usage(model, messages, tools, output)
        return output

    async def _back_off(self, ex: Exception, failures: int) -> None:
        wait = self.retry.wait(failures)
        record: dict[str, Any] = {
            "retry": failures,
            "of": self.retry.attempts - 1,
            "wait_seconds": round(wait, 2),
            "error": repr(ex)[:500],
        }
        sample_store().set(RETRIES_KEY, [*sample_store().get(RETRIES_KEY, []), record])
        transcript().info({"model_retry": record}, source="labcoat.model")
        logger.warning("model response unreadable (%r); retry %d in %.1f s", ex, failures, wait)
        with suspend_working_limit():  # backoff is waiting, as Inspect counts its own
            await anyio.sleep(wait)

    def _count_usage(
        self,
        model: Model,
        messages: list[ChatMessage],
        tools: Sequence[Tool],
        output: ModelOutput,
    ) -> None:
        """Count this call's tokens here and record them as Inspect records usage."""
        # Inspect's own accounting (per-model usage, token and cost limits); it has no
        # public entry point, and a provider without usage leaves it unrecorded
        from inspect_ai.model._model import record_and_check_model_usage

        usage = self.counter.usage(messages, tools, output)
        output.usage = usage
        so_far = sample_store().get(USAGE_KEY) or {
            "method": self.counter.method,
            "calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
        }
        bad = discarded(output)
        if bad is None and so_far["calls"] == so_far.get("unusable", 0):
            self._warn(model, "usage_missing", "returned no token usage")
        elif bad is not None and not so_far.get("unusable"):
            self._warn(model, "usage_unusable", f"reported unusable token usage ({bad['reason']})")
        so_far["calls"] += 1
        if bad is not None:  # counted here, though the provider reported something
            so_far["unusable"] = so_far.get("unusable", 0) + 1
        so_far["input_tokens"] += usage.input_tokens
        so_far["output_tokens"] += usage.output_tokens
        sample_store().set(USAGE_KEY, so_far)
        record_and_check_model_usage(model, usage, role=model.role, output=output)

    def _warn(self, model: Model, key: str, what: str) -> None:
        """In the sample's log (the first time it happens in a sample), and once a model."""
        warning = (
            f"{model} {what}: labcoat counts tokens itself ({self.counter.method}) "
            "so token and cost limits still hold"
        )
        transcript().info({key: warning}, source="labcoat.model")
        if (str(model), key) not in _warned_models:
            _warned_models.add((str(model), key))
            logger.warning(warning)

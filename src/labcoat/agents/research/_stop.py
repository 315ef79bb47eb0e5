"""What ended a research run, said in the log (`labcoat:stopped_by`) and in reports.

`type` is one of:

| type | the run ended because |
|---|---|
| `submitted` | the agent called submit |
| `time` | the wall-clock limit (the task's budget or `--time-limit`) ran out |
| `working` | the working-time limit ran out |
| `token` | the token limit was reached |
| `cost` | the cost limit was reached |
| `message` | the message limit was reached |
| `budget` | the run's budget (`--budget-usd`, `--budget-tokens`, `--budget-gpu-hours`) was spent |
| `context_overflow` | the conversation no longer fit the context window, even after a handoff |
| `refusals` | the model refused (content filter) three times in a row |
| `error` | an error ended the sample (a persistent model failure, a broken tool, ...) |
| `cancelled` | the run was cancelled or interrupted from outside |
| `finished` | the agent loop ended on its own without any of the above |

Other Inspect limits (`turn`, `operator`, `custom`) keep Inspect's name.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.agent import AgentState
from inspect_ai.log import transcript
from inspect_ai.util import LimitExceededError, sample_limits
from inspect_ai.util import store as sample_store

from labcoat._util.store_keys import STOP_KEY

SUBMIT_TOOL = "submit"


def limit_stop(error: LimitExceededError) -> dict[str, Any]:
    return {
        # the run's budget raises a `custom` limit that names itself (labcoat._run._budget)
        "type": getattr(error, "stop_type", None) or error.type,
        "limit": error.limit,
        "value": error.value,
        "message": error.message,
    }


def error_stop(error: BaseException) -> dict[str, Any]:
    return {"type": "error", "error": type(error).__name__, "message": str(error)[:2000]}


def cancel_stop() -> dict[str, Any]:
    """Cancelled from outside: a sample time or working limit, the run's budget (which
    stops a sample as a limit does), or an interrupt."""
    from inspect_ai.log._samples import sample_active

    active = sample_active()
    error = active.limit_exceeded_error if active is not None else None
    if error is not None:
        return limit_stop(error)
    try:
        limits = sample_limits()
    except RuntimeError:
        return {"type": "cancelled"}
    for kind in ("time", "working"):
        limit = getattr(limits, kind)
        if limit.limit is not None and limit.usage >= limit.limit:
            return {
                "type": kind,
                "limit": limit.limit,
                "value": round(limit.usage, 3),
                "message": f"Exceeded {kind} limit: {limit.limit:,}",
            }
    return {"type": "cancelled"}


def agent_stop(state: AgentState) -> dict[str, Any]:
    """The agent loop returned: why, from its last model output."""
    output = state.output
    if not output.choices:
        return {"type": "finished"}
    if any(c.function == SUBMIT_TOOL for c in output.message.tool_calls or []):
        return {"type": "submitted"}
    if output.stop_reason == "model_length":
        return {"type": "context_overflow", "message": output.completion[:2000]}
    if output.stop_reason == "content_filter":
        return {"type": "refusals", "message": output.completion[:2000]}
    return {"type": "finished"}


def record_stop(record: dict[str, Any]) -> None:
    sample_store().set(STOP_KEY, record)
    transcript().info({"stopped_by": record}, source="labcoat.budget")

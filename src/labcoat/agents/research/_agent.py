"""The research agent: Inspect's react() loop with labcoat's tools and budgets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from inspect_ai.agent import AgentPrompt, AgentState, AgentSubmit, react
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef
from inspect_ai.util import LimitExceededError, apply_limits, span
from inspect_ai.util import message_limit as inspect_message_limit

from labcoat.agents.research._handoff import ContextHandoff, context_window
from labcoat.agents.research._limits_left import AgentLimitsLeft
from labcoat.agents.research._model import DEFAULT_MODEL_TIMEOUT, ModelCalls, RetryPolicy
from labcoat.agents.research._prompt import system_prompt
from labcoat.agents.research._stop import (
    agent_stop,
    cancel_stop,
    error_stop,
    limit_stop,
    record_stop,
)
from labcoat.agents.research._tools import (
    apply_patch,
    bash,
    cancel_job,
    check_job,
    python,
    read_file,
    replace_text,
    search_files,
    start_job,
    write_file,
)
from labcoat.agents.research._tools._limits import DEFAULT_MAX_CALL_TIMEOUT
from labcoat.agents.research._tools.web import SearchProvider, web_search
from labcoat.integrity import Blocklist

FamilyTools = Callable[[dict[str, Any]], list[Tool]]


def base_tools(max_call_timeout: int) -> list[Tool]:
    return [
        bash(max_timeout=max_call_timeout),
        python(max_timeout=max_call_timeout),
        read_file(),
        search_files(),
        write_file(),
        replace_text(),
        apply_patch(),
        start_job(),
        check_job(),
        cancel_job(),
    ]


@solver
def research_agent(
    family_tools: FamilyTools | None = None,
    time_limit: float | None = None,
    working_limit: float | None = None,
    token_limit: int | None = None,
    cost_limit: float | None = None,
    message_limit: int | None = None,
    progress_every: int = 10,
    max_call_timeout: int | None = None,
    handoff_threshold: float = 0.85,
    context_window_tokens: int | None = None,
    model_timeout: int | None = None,
    model_retry: RetryPolicy | None = None,
) -> Solver:
    """An LLM research agent for long runs.

    Args:
        family_tools: Tools the task's family adds (e.g. `score`), from sample metadata.
        time_limit: Wall-clock seconds (default: the task's `time_limit_minutes`).
        working_limit: Working seconds (excludes model retries and waiting).
        token_limit: Tokens (input + output; reasoning tokens count once, as output).
        cost_limit: Dollars; needs known prices for the model.
        message_limit: Messages in the run (across context handoffs).
        progress_every: Tell the agent its budget every this many steps.
        max_call_timeout: Longest timeout a single bash/python call may ask for.
        handoff_threshold: Fraction of the context window at which the agent writes a
            handoff note and continues in a fresh context (the full transcript stays
            in the log).
        context_window_tokens: The model's context window, when Inspect does not know it.
        model_timeout: Seconds one model call may take before it is abandoned and
            retried (default: the run's `attempt_timeout`, else 300).
        model_retry: Retries of responses that cannot be read (truncated bodies).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        metadata = state.metadata or {}
        max_timeout = max_call_timeout or int(
            metadata.get("max_call_timeout") or DEFAULT_MAX_CALL_TIMEOUT
        )
        extra = family_tools(metadata) if family_tools else []
        tools = base_tools(max_timeout) + extra
        provider = SearchProvider.of_run()
        has_web = bool(metadata.get("network")) and provider is not None
        if has_web:
            assert provider is not None
            tools.append(web_search(provider, Blocklist.from_json(metadata.get("blocklist"))))
        allow_submit = bool(metadata.get("allow_submit", True))
        budget = AgentLimitsLeft.for_sample(
            metadata,
            progress_every=progress_every,
            time=time_limit,
            working=working_limit,
            tokens=token_limit,
            cost=cost_limit,
            messages=message_limit,
        )
        budget.record()
        calls = ModelCalls(resolve_model_timeout(model_timeout), model_retry)
        handoff = ContextHandoff(
            context_window(context_window_tokens), calls, handoff_threshold, tools=tools
        )

        # `state`, as Inspect's Agent protocol names it (react calls this as an Agent):
        # here the conversation, not the sample's TaskState it shadows
        async def model_turn(state: AgentState, tools: list[Tool]) -> AgentState:
            """One model call of the loop (react's `model`).

            Args:
                state: The conversation so far.
                tools: The tools the model may call.
            """
            budget.check_messages(handoff.total_messages(state.messages))
            state.output = await calls.generate(state.messages, tools)
            state.messages.append(state.output.message)
            return state

        async def on_continue(agent_state: AgentState) -> bool | str | AgentState:
            status = budget.record_step()
            if handoff.needed(agent_state):
                return await handoff.handoff(agent_state)
            if status is not None:
                return status
            if not allow_submit and not agent_state.output.message.tool_calls:
                return "Continue working on the task; there is no submit tool."
            return True

        agent = react(
            prompt=AgentPrompt(
                instructions=system_prompt(
                    has_score="score" in {ToolDef(t).name for t in extra},
                    has_web=has_web,
                    allow_submit=allow_submit,
                ),
                assistant_prompt=None,
                submit_prompt=None,
            ),
            tools=tools,
            model=model_turn,
            submit=AgentSubmit(answer_only=True) if allow_submit else False,
            on_continue=on_continue,
            truncation=handoff.on_overflow,
        )
        # Our own state object: whatever stops the loop (our limits, the sample's own
        # limits or cancellation, an error), everything the agent did reaches the record.
        agent_state = AgentState(messages=list(state.messages))
        stop = None
        try:
            with apply_limits(budget.limits(), catch_errors=True) as scope:
                async with span(name="research_agent", type="agent"):
                    agent_state = await agent(agent_state)
            error = scope.limit_error
            stop = limit_stop(error) if error is not None else agent_stop(agent_state)
        except LimitExceededError as ex:  # a sample-level limit: record it, let Inspect act
            stop = limit_stop(ex)
            raise
        except anyio.get_cancelled_exc_class():  # the sample's time or working limit
            stop = cancel_stop()
            raise
        except Exception as ex:
            stop = error_stop(ex)
            raise
        finally:
            budget.record_step(final=True)  # the submitting (or limit-hitting) turn
            record_stop(stop or cancel_stop())
            # the whole run, handoffs included, however long: the message limit bounded
            # the conversation while the agent ran, not the record
            with inspect_message_limit(None):
                state.messages = handoff.full_history(agent_state.messages)
            state.output = agent_state.output
        return state

    return solve


def resolve_model_timeout(explicit: int | None) -> int:
    """Per-attempt model timeout: ours, else the run's `attempt_timeout`, else the default."""
    if explicit:
        return explicit
    from inspect_ai.model._generate_config import active_generate_config  # no public API

    return active_generate_config().attempt_timeout or DEFAULT_MODEL_TIMEOUT

"""Context handoff ('memento'): when the conversation nears the model's window, or the
provider says it no longer fits, the agent writes a note to itself and continues in a
fresh context that holds the task and the note.

Two triggers:
- usage: a model call reports (or, without provider usage, is counted locally at)
  more than `threshold` of the window;
- overflow: the provider refuses a request as too long (`context_length_exceeded`).
  Inspect's `react()` hands the conversation to `on_overflow` (its `truncation`
  hook); the note is then written from a shortened view of the conversation (the
  oldest tool outputs blanked first, then the oldest turns left out) that fits.

Nothing leaves the record: the messages a handoff drops are kept and put back in
front of the final conversation, and every model call stays in the log's events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from inspect_ai.agent import AgentState
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    get_model,
)
from inspect_ai.model import get_model_info as model_info
from inspect_ai.tool import Tool
from inspect_ai.util import store
from pydantic import JsonValue

from labcoat._util.store_keys import HANDOFFS_KEY
from labcoat.agents.research._model import ModelCalls
from labcoat.agents.research._prompt import MEMENTO_INSTRUCTIONS

DEFAULT_CONTEXT_WINDOW = 128_000
HANDOFF_REQUEST = "Write your handoff note now."
CARRIED_PREFIX = "[Context handoff "
NOTE_ATTEMPTS = 4
KEEP_TOOL_OUTPUT = 200  # characters: shorter tool outputs are never blanked


def context_window(explicit: int | None = None) -> int:
    if explicit:
        return explicit
    info = model_info(get_model())
    return (info.input_tokens if info and info.input_tokens else None) or DEFAULT_CONTEXT_WINDOW


def _task_prefix(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The system message(s) and the task statement at the head of the conversation
    (a handoff note that follows them is not part of it)."""
    prefix: list[ChatMessage] = []
    for message in messages:
        if isinstance(message, ChatMessageSystem) or (
            isinstance(message, ChatMessageUser)
            and not message.text.startswith(CARRIED_PREFIX)
            and all(isinstance(m, ChatMessageSystem | ChatMessageUser) for m in prefix)
        ):
            prefix.append(message)
        else:
            break
    return prefix


def _turns(body: list[ChatMessage]) -> list[list[ChatMessage]]:
    """Messages grouped so that no tool result is parted from the call that asked for it."""
    turns: list[list[ChatMessage]] = []
    for message in body:
        if isinstance(message, ChatMessageTool) and turns:
            turns[-1].append(message)
        else:
            turns.append([message])
    return turns


@dataclass
class ContextHandoff:
    window: int
    calls: ModelCalls
    threshold: float = 0.85
    tools: Sequence[Tool] = ()
    dropped: list[ChatMessage] = field(default_factory=list)
    count: int = 0

    def needed(self, state: AgentState) -> bool:
        usage = state.output.usage
        if usage is None:
            return False
        used = usage.input_tokens + usage.output_tokens + (usage.input_tokens_cache_read or 0)
        return used > self.threshold * self.window

    def full_history(self, final: list[ChatMessage]) -> list[ChatMessage]:
        """Everything the agent saw and did, in order, for the sample's record."""
        if not self.dropped:
            return final
        prefix = _task_prefix(final)
        return [*prefix, *self.dropped, *final[len(prefix) :]]

    def total_messages(self, current: Sequence[ChatMessage]) -> int:
        """Messages of the whole run: those handed off and the current conversation."""
        return len(self.dropped) + len(current)

    async def handoff(self, state: AgentState) -> AgentState:
        """The usage trigger (from react's `on_continue`)."""
        tokens = state.output.usage.total_tokens if state.output.usage else None
        messages = await self._replace(list(state.messages), "usage", tokens)
        return AgentState(messages=messages)

    async def on_overflow(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The overflow trigger (react's `truncation` filter).

        Returning the conversation unchanged tells react it cannot be shortened, and the
        run stops (`stopped_by: context_overflow`): when nothing but the task and a
        previous note is left.
        """
        body = messages[len(_task_prefix(messages)) :]
        only_a_note = all(
            isinstance(m, ChatMessageUser) and m.text.startswith(CARRIED_PREFIX) for m in body
        )
        if only_a_note:
            transcript().info(
                "The task statement (and handoff note) alone exceed the context window.",
                source="labcoat.handoff",
            )
            return messages
        return await self._replace(messages, "overflow", None)

    async def _replace(
        self, messages: list[ChatMessage], trigger: str, tokens: int | None
    ) -> list[ChatMessage]:
        prefix = _task_prefix(messages)
        note, shortened = await self._write_note(messages, shortened=trigger == "overflow")
        self.dropped.extend(messages[len(prefix) :])
        self.count += 1
        if note is None:
            note = (
                "(No note could be written: even a shortened conversation did not fit the "
                "context window. Check the files in your workspace to see where you are.)"
            )
        carried = ChatMessageUser(
            content=f"{CARRIED_PREFIX}{self.count}] Your earlier context was replaced by "
            f"this note you wrote:\n\n{note}"
        )
        record: dict[str, JsonValue] = {
            "handoff": self.count,
            "trigger": trigger,
            "messages_dropped": len(self.dropped),
            "tokens_at_handoff": tokens,
            "note_from_shortened_context": shortened,
            "note": note,
        }
        store().set(HANDOFFS_KEY, [*store().get(HANDOFFS_KEY, []), record])
        transcript().info(record, source="labcoat.handoff")
        return [*prefix, carried]

    async def _write_note(
        self, messages: list[ChatMessage], shortened: bool
    ) -> tuple[str | None, bool]:
        """The note, asked for on a view that fits; halved each time it does not."""
        calls = self.calls
        request = ChatMessageUser(content=f"{HANDOFF_REQUEST}\n\n{MEMENTO_INSTRUCTIONS}")
        size = calls.counter.count_messages(messages)
        for attempt in range(NOTE_ATTEMPTS):
            view = shorten(messages, size // 2 ** (attempt + 1), calls) if shortened else messages
            output = await calls.generate([*view, request], self.tools, tool_choice="none")
            if output.stop_reason != "model_length":
                return output.completion, shortened
            shortened = True
        return None, shortened


def shorten(messages: list[ChatMessage], target: int, calls: ModelCalls) -> list[ChatMessage]:
    """The conversation cut to about `target` tokens for writing a note.

    The task stays whole. The oldest tool outputs are blanked first (they are the bulk
    of a research transcript), then the oldest turns are left out whole.
    """
    count = calls.counter.count_messages
    prefix = _task_prefix(messages)
    body = list(messages[len(prefix) :])
    size = count(messages)
    for i, message in enumerate(body):
        if size <= target:
            break
        if isinstance(message, ChatMessageTool) and len(message.text) > KEEP_TOOL_OUTPUT:
            blank = f"[output of {len(message.text):,} characters left out to fit the context]"
            replacement = message.model_copy(update={"content": blank, "error": None})
            size += count([replacement]) - count([message])
            body[i] = replacement
    turns = _turns(body)
    while turns and size > target:
        size -= count(turns.pop(0))
    return [*prefix, *(m for turn in turns for m in turn)]

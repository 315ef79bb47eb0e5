"""What a person's session leaves in the `.eval` log: each command as an agent's `bash`
call would appear (an assistant turn calling the tool, the tool's output), timed events in
the transcript, and the terminal recording (asciicast v2) in the sample's store."""

from __future__ import annotations

import json
import time
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool
from inspect_ai.solver import TaskState
from inspect_ai.tool import ToolCall

SOURCE = "labcoat.human"
MODEL = "human"
RECORDING_KEY = "labcoat:human_recording"
SUMMARY_KEY = "labcoat:human"
RECORDING_BYTES = 2 * 1024 * 1024
"""What the terminal showed, the tail kept in the log; what was typed is all kept, as are
the per-command records (docs/humans.md). A recording that lost output flags the run."""


class SessionRecord:
    """Writes a session into the sample's state and transcript as it happens."""

    def __init__(self, state: TaskState, width: int = 80, height: int = 24) -> None:
        self.state = state
        self.started = time.time()
        header = {"version": 2, "width": width, "height": height, "timestamp": int(self.started)}
        self._header = json.dumps(header)
        self._events: list[tuple[str, str]] = []
        self._shown_size = 0
        self.truncated = False
        self.commands = 0
        self._calls = 0

    def event(self, action: str, **details: Any) -> None:
        transcript().info({"human": action, "time": time.time(), **details}, source=SOURCE)

    def tool_call(self, function: str, arguments: dict[str, Any], output: str) -> None:
        self._calls += 1
        call_id = f"human-{self._calls}"
        call = ToolCall(id=call_id, function=function, arguments=arguments)
        self.state.messages.append(
            ChatMessageAssistant(content="", tool_calls=[call], model=MODEL, source="generate")
        )
        self.state.messages.append(
            ChatMessageTool(content=output, tool_call_id=call_id, function=function)
        )

    def command(self, record: dict[str, Any]) -> None:
        """One command typed to the shell (`_commands.CommandLog`'s record)."""
        self.commands += 1
        output = str(record.get("output", ""))
        status = record.get("exit")
        if status not in (None, 0):
            output += f"\n[exit status {status}, as the shell reported it]"
        self.tool_call("bash", {"cmd": str(record.get("command", ""))}, output)
        self.event(
            "command",
            command=record.get("command"),
            typed=record.get("typed"),
            output_truncated=bool(record.get("truncated")),
            shell_reported={k: record.get(k) for k in ("exit", "cwd", "shell_line")},
        )

    def typed_to(self, program: str, text: str) -> None:
        """A line typed to a program other than the shell (an editor, a REPL, a prompt)."""
        self.event("typed", to=program, text=text[:4096])

    def stream(self, kind: str, text: str) -> None:
        """One asciicast event: `o` what the terminal showed, `i` what was typed. Typed
        events are never dropped; shown ones are, oldest first, past `RECORDING_BYTES`."""
        line = json.dumps([round(time.time() - self.started, 3), kind, text])
        self._events.append((kind, line))
        if kind == "o":
            self._shown_size += len(line) + 1
            if self._shown_size > RECORDING_BYTES * 5 // 4:  # compacted now and then
                self._compact()

    def _compact(self) -> None:
        kept: list[tuple[str, str]] = []
        for kind, line in self._events:
            if kind == "o" and self._shown_size > RECORDING_BYTES:
                self._shown_size -= len(line) + 1
                self.truncated = True
            else:
                kept.append((kind, line))
        self._events = kept

    def recording(self) -> str:
        self._compact()
        return "\n".join([self._header, *(line for _, line in self._events)]) + "\n"

    def finish(self, summary: dict[str, Any]) -> None:
        recording = self.recording()  # compacted: `truncated` is final
        self.state.store.set(
            SUMMARY_KEY,
            {**summary, "commands": self.commands, "recording_truncated": self.truncated},
        )
        self.state.store.set(RECORDING_KEY, recording)

"""A misbehaving OpenAI-compatible chat-completions server on 127.0.0.1, for fault tests.

Each request gets the next entry of a script: a normal turn (text or tool calls, with
or without `usage`, or with a `usage` the script makes up) or a fault — HTTP 200 with a
truncated JSON body or no choices, a status error with an OpenAI-style error body
(429, 5xx, 400 `context_length_exceeded`), a response that hangs, or a connection
dropped without a reply. A script can also be a function
of the request number, for runs of any length, and the server can enforce a context
window (a request longer than it is refused with `context_length_exceeded`, as
OpenAI does) and answer the research agent's handoff-note requests by itself.

Everything received and done is recorded, so tests can check what really went over
the wire.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# --- what a request can get ----------------------------------------------------------


@dataclass
class Turn:
    """A normal completion: text and/or tool calls."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: bool | dict[str, Any] = True
    """False: no `usage`; a dict: this `usage`, whatever it says (e.g. negative counts)."""


def tool(name: str, **arguments: Any) -> Turn:
    return Turn(tool_calls=[(name, arguments)])


def text(content: str) -> Turn:
    return Turn(content=content)


@dataclass
class Truncated:
    """HTTP 200, `application/json`, but the body stops half way."""


@dataclass
class NoChoices:
    """HTTP 200 and valid JSON, but `choices: []`: nothing to read."""


@dataclass
class Status:
    """An HTTP error with OpenAI's error body."""

    code: int
    error_type: str = "server_error"
    error_code: str | None = None
    message: str = "the server had an error"
    headers: dict[str, str] = field(default_factory=dict)


def rate_limited() -> Status:
    return Status(
        429,
        "rate_limit_exceeded",
        "rate_limit_exceeded",
        "Rate limit reached for requests",
        {"retry-after-ms": "50"},
    )


def context_length_exceeded(tokens: int = 0, window: int = 0) -> Status:
    return Status(
        400,
        "invalid_request_error",
        "context_length_exceeded",
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
    )


@dataclass
class Hang:
    """Accept the request and send nothing for `seconds` (then close)."""

    seconds: float = 3600


@dataclass
class Drop:
    """Close the connection without a reply."""


Reply = Turn | Truncated | NoChoices | Status | Hang | Drop
Script = list[Reply] | Callable[[int], Reply]

HANDOFF_REQUEST = "Write your handoff note now."
HANDOFF_NOTE = "Handoff note: goal is the prefix sum task; nothing measured yet; next: keep going."


def request_tokens(body: dict[str, Any]) -> int:
    """The server's own size of a request: about 4 characters a token."""
    return sum(len(json.dumps(m)) for m in body.get("messages", [])) // 4


# --- the server ------------------------------------------------------------------------


@dataclass
class FaultyServer:
    script: Script
    context_window: int | None = None
    answer_handoffs: bool = True
    requests: list[dict[str, Any]] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    """What each request got: 'turn', 'truncated', 'status 429', 'hang', 'drop', ..."""
    base_url: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _scripted: int = 0

    def count(self, what: str) -> int:
        return sum(1 for d in self.done if d == what)

    def choose(self, body: dict[str, Any]) -> tuple[Reply, int]:
        """The reply to this request, and its number (from 0)."""
        with self._lock:
            self.requests.append(body)
            number = len(self.requests) - 1
            tokens = request_tokens(body)
            if self.context_window is not None and tokens > self.context_window:
                return context_length_exceeded(tokens, self.context_window), number
            last = (body.get("messages") or [{}])[-1]
            if self.answer_handoffs and str(last.get("content", "")).startswith(HANDOFF_REQUEST):
                return text(HANDOFF_NOTE), number
            index, self._scripted = self._scripted, self._scripted + 1
            if callable(self.script):
                return self.script(index), number
            return self.script[min(index, len(self.script) - 1)], number

    def completion(self, turn: Turn, body: dict[str, Any], number: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.content}
        finish = "stop"
        if turn.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for i, (name, arguments) in enumerate(turn.tool_calls)
            ]
            finish = "tool_calls"
        completion: dict[str, Any] = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "faulty"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if isinstance(turn.usage, dict):
            completion["usage"] = turn.usage
        elif turn.usage:
            prompt = request_tokens(body)
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": 20,
                "total_tokens": prompt + 20,
            }
        return completion


@contextmanager
def faulty_openai(
    script: Script, context_window: int | None = None, answer_handoffs: bool = True
) -> Iterator[FaultyServer]:
    server_state = FaultyServer(script, context_window, answer_handoffs)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            reply, number = server_state.choose(body)
            if isinstance(reply, Turn):
                server_state.done.append("turn")
                self._send(200, server_state.completion(reply, body, number))
            elif isinstance(reply, Truncated):
                server_state.done.append("truncated")
                whole = json.dumps(server_state.completion(text("cut"), body, number)).encode()
                self._send_raw(200, whole[: len(whole) // 2])
            elif isinstance(reply, NoChoices):
                server_state.done.append("no choices")
                self._send(200, {**server_state.completion(text(""), body, number), "choices": []})
            elif isinstance(reply, Status):
                server_state.done.append(f"status {reply.code}")
                error = {
                    "message": reply.message,
                    "type": reply.error_type,
                    "param": "messages" if reply.code == 400 else None,
                    "code": reply.error_code,
                }
                self._send(reply.code, {"error": error}, reply.headers)
            elif isinstance(reply, Hang):
                server_state.done.append("hang")
                server_state._stop.wait(reply.seconds)
                self.close_connection = True
            else:
                server_state.done.append("drop")
                self.close_connection = True

        def _send(
            self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            self._send_raw(code, json.dumps(payload).encode(), headers)

        def _send_raw(self, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server_state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        server_state._stop.set()  # release hung handlers
        server.shutdown()
        server.server_close()

"""An OpenAI-compatible endpoint on 127.0.0.1 that answers each conversation by its state.

Unlike a global script, it serves many samples at once: no tool result yet -> run `env`;
one -> submit "1"; more -> stop. It records the Authorization header of every request and
the most requests it ever had in flight at once (each is held `delay` seconds).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from openai_stub import json_endpoint


@dataclass
class ConversationStub:
    delay: float
    base_url: str = ""
    authorizations: list[str] = field(default_factory=list)
    in_flight: int = 0
    peak: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def turn(self, body: dict[str, Any], index: int) -> dict[str, Any]:
        results = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if results == 0:
            call = ("bash", {"cmd": "env"})
        elif results == 1:
            call = ("submit", {"answer": "1"})
        else:
            message["content"] = "done"
            call = None
        if call is not None:
            message["tool_calls"] = [
                {
                    "id": f"call_{index}",
                    "type": "function",
                    "function": {"name": call[0], "arguments": json.dumps(call[1])},
                }
            ]
        return {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }


@contextmanager
def conversation_stub(delay: float = 0.0) -> Iterator[ConversationStub]:
    stub = ConversationStub(delay)

    def respond(request: BaseHTTPRequestHandler, body: dict[str, Any]) -> dict[str, Any]:
        with stub.lock:
            stub.authorizations.append(request.headers.get("Authorization", ""))
            index = len(stub.authorizations)
            stub.in_flight += 1
            stub.peak = max(stub.peak, stub.in_flight)
        try:
            time.sleep(stub.delay)
            return stub.turn(body, index)
        finally:
            with stub.lock:
                stub.in_flight -= 1

    with json_endpoint(respond) as base_url:
        stub.base_url = base_url
        yield stub

"""A real HTTP server on 127.0.0.1 speaking OpenAI's chat-completions protocol.

It answers each request with the next scripted turn (text or tool calls) and records
what it received, so tests drive Inspect's OpenAI-compatible provider end to end
without any network beyond loopback.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_turn(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def text_turn(text: str) -> dict[str, Any]:
    return {"content": text}


@dataclass
class StubServer:
    turns: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        index = len(self.requests) - 1
        turn = self.turns[min(index, len(self.turns) - 1)]
        message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
        finish = "stop"
        if "tool_calls" in turn:
            message["tool_calls"] = [
                {
                    "id": f"call_{index}_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for i, c in enumerate(turn["tool_calls"])
            ]
            finish = "tool_calls"
        prompt_tokens = sum(len(json.dumps(m)) // 4 for m in body.get("messages", []))
        return {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": 20,
                "total_tokens": prompt_tokens + 20,
            },
        }


@contextmanager
def json_endpoint(
    respond: Callable[[BaseHTTPRequestHandler, dict[str, Any]], dict[str, Any] | None],
) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 that answers each POST with
    `respond(request, body)` as JSON (None: 404); yields its `/v1` base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            answer = respond(self, body)
            if answer is None:
                self.send_error(404)
                return
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def openai_stub(turns: list[dict[str, Any]]) -> Iterator[StubServer]:
    stub = StubServer(turns)

    def respond(request: BaseHTTPRequestHandler, body: dict[str, Any]) -> dict[str, Any] | None:
        if not request.path.endswith("/chat/completions"):
            return None
        stub.requests.append(body)
        stub.headers.append({k.lower(): v for k, v in request.headers.items()})
        return stub.respond(body)

    with json_endpoint(respond) as base_url:
        stub.base_url = base_url
        yield stub

"""The pieces of the research agent's model-call path, one at a time (no model, no network)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.model._model import ModelGenerateError
from inspect_ai.tool import ToolCall

from labcoat.agents.research import _tokens
from labcoat.agents.research._handoff import shorten
from labcoat.agents.research._model import (
    ModelCalls,
    RetryPolicy,
    context_overflow_message,
    is_malformed_response,
)
from labcoat.agents.research._tokens import (
    ENCODING_URL,
    TokenCounter,
    cached_encoding_path,
    estimate_tokens,
)


def test_unreadable_bodies_are_recognised_through_their_causes() -> None:
    try:
        json.loads('{"choices": [')
    except json.JSONDecodeError as ex:
        decode = ex
    assert is_malformed_response(decode)
    wrapped = RuntimeError("provider failed")
    wrapped.__cause__ = decode
    assert is_malformed_response(wrapped)
    assert not is_malformed_response(RuntimeError("401 Unauthorized"))
    assert not is_malformed_response(PermissionError("no"))


def test_length_errors_from_any_server_are_overflows() -> None:
    vllm = ModelGenerateError(
        "Request: ...",
        status_code=400,
        provider_message="This model's maximum context length is 4096 tokens.",
    )
    assert "maximum context length" in (context_overflow_message(vllm) or "")
    anthropic = ModelGenerateError(
        "x", status_code=400, provider_message="prompt is too long: 210000 tokens > 200000"
    )
    assert context_overflow_message(anthropic)
    # a bad request about something else, or a 500 mentioning context, is not one
    other = ModelGenerateError("x", status_code=400, provider_message="invalid tool schema")
    assert context_overflow_message(other) is None
    server = ModelGenerateError("x", status_code=500, provider_message="context length oops")
    assert context_overflow_message(server) is None


def test_backoff_is_bounded() -> None:
    policy = RetryPolicy(attempts=10, initial_wait=1.0, max_wait=30.0)
    waits = [policy.wait(retry) for retry in range(1, 10)]
    assert 1.0 <= waits[0] <= 1.25 and all(w <= 30 * 1.25 for w in waits)
    assert waits[5] >= 30.0  # doubled up to the cap


def test_estimates_count_everything_a_request_carries() -> None:
    counter = TokenCounter("estimate", estimate_tokens)
    call = ToolCall(id="c1", function="bash", arguments={"cmd": "x" * 300})
    messages = [
        ChatMessageSystem(content="s" * 300),
        ChatMessageUser(content="u" * 300),
        ChatMessageAssistant(content="", tool_calls=[call]),
        ChatMessageTool(content="t" * 3000, tool_call_id="c1", function="bash"),
    ]
    output = ModelOutput.from_content("m", "done " * 60)
    usage = counter.usage(messages, [], output)
    # 3 bytes a token: 100 + 100 + ~105 (the call) + 1000, plus 4 a message
    assert 1_300 <= usage.input_tokens <= 1_340
    assert usage.output_tokens == 4 + 100
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


def test_no_tokenizer_is_ever_downloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.load

    def no_network(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken tried to download an encoding")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    _tokens.local_counter.cache_clear()
    try:
        # nothing cached: the estimate
        assert cached_encoding_path() is None
        assert _tokens.local_counter().method == "estimate: 1 token per 3 bytes"
        # a damaged cache file is not trusted (tiktoken would delete it and download)
        bad = tmp_path / hashlib.sha1(ENCODING_URL.encode()).hexdigest()
        bad.write_bytes(b"not an encoding")
        _tokens.local_counter.cache_clear()
        assert cached_encoding_path() is None
        assert _tokens.local_counter().method.startswith("estimate")
        assert bad.exists()
        # caching turned off (an empty directory): tiktoken would download every time
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
        assert cached_encoding_path() is None
    finally:
        _tokens.local_counter.cache_clear()


def test_a_cached_encoding_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tiktoken

    class Encoding:
        def encode(self, text: str, disallowed_special: object = ()) -> list[int]:
            return list(range(len(text.split())))

    monkeypatch.setattr(_tokens, "cached_encoding_path", lambda: tmp_path)
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: Encoding())
    _tokens.local_counter.cache_clear()
    try:
        counter = _tokens.local_counter()
        assert counter.method == "tiktoken o200k_base (cached)"
        assert counter.count_text("three words here") == 3
    finally:
        _tokens.local_counter.cache_clear()


def test_shortening_for_a_note_blanks_old_outputs_first_then_drops_old_turns() -> None:
    calls = ModelCalls(timeout=60, counter=TokenCounter("estimate", estimate_tokens))

    def turn(i: int, size: int) -> list:
        call = ToolCall(id=f"c{i}", function="bash", arguments={"cmd": f"step {i}"})
        return [
            ChatMessageAssistant(content="", tool_calls=[call]),
            ChatMessageTool(content=str(i) * size, tool_call_id=f"c{i}", function="bash"),
        ]

    task = [ChatMessageSystem(content="system"), ChatMessageUser(content="the task")]
    messages = [*task, *turn(1, 6000), *turn(2, 6000), *turn(3, 300)]
    count = calls.counter.count_messages
    # enough room once the oldest output is blanked
    view = shorten(messages, count(messages) - 1500, calls)
    assert view[:2] == task and len(view) == len(messages)
    assert view[3].text.startswith("[output of 6,000 characters left out")
    assert view[5].text == "2" * 6000
    # little room: old turns go whole, a call never loses its result
    view = shorten(messages, 200, calls)
    assert view[:2] == task
    kept = view[2:]
    assert all(
        isinstance(kept[i], ChatMessageAssistant) and isinstance(kept[i + 1], ChatMessageTool)
        for i in range(0, len(kept), 2)
    )
    assert count(view) <= 200 or kept == []


def test_every_model_call_has_a_timeout_by_default(tmp_path: Path) -> None:
    """`inspect eval` users get the 300 s default too; `--attempt-timeout` replaces it."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from scripted_models import scripted_call

    from labcoat.agents.research import DEFAULT_MODEL_TIMEOUT, research_agent

    def run(**kw: object) -> list[int | None]:
        task = Task(dataset=[Sample(input="Say done.")], solver=research_agent())
        model = get_model("mockllm/model", custom_outputs=[scripted_call("submit", answer="x")])
        [log] = eval(task, model=model, log_dir=str(tmp_path), display="none", **kw)
        assert log.samples
        events = [e for e in log.samples[0].events if e.event == "model"]
        return [e.config.attempt_timeout for e in events]

    assert run() == [DEFAULT_MODEL_TIMEOUT] == [300]
    assert run(attempt_timeout=42) == [42]

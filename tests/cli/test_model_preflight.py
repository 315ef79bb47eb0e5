"""A model server's address is tried before any sandbox starts: every OpenAI-compatible
base URL the user set (SERVICE_BASE_URL of `openai-api/SERVICE/...`, OPENAI_BASE_URL,
`--model-base-url`, a local server's default) fails the eval in one line
when nothing answers there, and passes when a server answers with any status."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli_captured

from labcoat._errors import LabcoatError
from labcoat._run import _preflight
from labcoat._run._models import check_model


def closed_port_url() -> str:
    """A loopback URL where nothing listens (a port just released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextmanager
def answering_server(status: int) -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server that answers every GET with `status`; yields (its /v1 base URL,
    the paths it was asked for)."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_error(status)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", asked
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "INSPECT_EVAL_MODEL_BASE_URL", "OLLAMA_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MYSERVER_API_KEY", "x")
    monkeypatch.setenv("OPENAI_API_KEY", "x")


def test_the_issue_command_fails_at_once_naming_the_url_and_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = closed_port_url()
    monkeypatch.setenv("MYSERVER_BASE_URL", url)
    logs = tmp_path / "logs"
    code, out, err = run_cli_captured(
        capsys, "eval", "mini", "--agent", "research", "--model", "openai-api/myserver/my-model",
        "--task", "prefix_sum/main", "--log-dir", str(logs),
    )  # fmt: skip
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert url in line and "MYSERVER_BASE_URL" in line and "start the server" in line
    assert "Traceback" not in out + err
    assert not logs.exists()  # stopped before the run began: no log, no sandbox


@pytest.mark.parametrize(
    ("model", "how", "source"),
    [
        ("openai-api/myserver/m", "env:MYSERVER_BASE_URL", "MYSERVER_BASE_URL"),
        ("openai/gpt-5", "env:OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        ("openai/gpt-5", "option", "--model-base-url"),
        ("ollama/llama3", "env:OLLAMA_BASE_URL", "OLLAMA_BASE_URL"),
        ("vllm/some-model", "env:VLLM_BASE_URL", "VLLM_BASE_URL"),
        ("openai/gpt-5", "env:INSPECT_EVAL_MODEL_BASE_URL", "INSPECT_EVAL_MODEL_BASE_URL"),
    ],
)
def test_every_base_url_is_tried_where_it_was_set(
    model: str, how: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = closed_port_url()
    monkeypatch.setenv("MYSERVER_BASE_URL", "http://unused.invalid/v1")
    kwargs: dict[str, Any] = {}
    if how.startswith("env:"):
        monkeypatch.setenv(how.removeprefix("env:"), url)
    else:
        kwargs["base_url"] = url
    with pytest.raises(LabcoatError) as raised:
        check_model(model, **kwargs)
    message = str(raised.value)
    assert message.startswith(f"--model {model}: no model server answers at {url}")
    assert f"(from {source})" in message and "refused" in message.lower()


def test_a_base_url_given_as_a_model_arg_is_refused_pointing_to_the_option() -> None:
    """Inspect gives the provider `base_url` itself: `-M base_url` would clash mid-run."""
    with pytest.raises(LabcoatError, match="give the model's base URL as --model-base-url"):
        check_model("openai-api/myserver/m", model_args={"base_url": "http://127.0.0.1:9/v1"})


def test_a_server_that_answers_passes_whatever_its_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with answering_server(401) as (url, asked):
        monkeypatch.setenv("MYSERVER_BASE_URL", url)
        check_model("openai-api/myserver/m")
    assert asked == ["/v1/models"]  # a real request went there


def test_a_server_that_accepts_but_never_answers_fails_within_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_preflight, "TIMEOUT_SECONDS", 0.5)
    with socket.socket() as silent:  # listens (the kernel accepts) but never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        with pytest.raises(LabcoatError, match=r"no answer within 0\.5 s"):
            check_model("openai/gpt-5", base_url=url)


def test_a_hosted_default_is_not_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    """openai/... with no base URL set talks to the provider's own API: not a server of
    the user's, and an offline check must not need the internet."""
    import httpx

    def no_request(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a request was made")

    monkeypatch.setattr(httpx, "get", no_request)
    check_model("openai/gpt-5")

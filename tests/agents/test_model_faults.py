"""A long unattended run survives a misbehaving model API.

Each test drives `labcoat eval mini --agent research` (or Inspect's `eval` with the
research agent, where a test needs a parameter the CLI doesn't have) against a real
HTTP server on 127.0.0.1 that injects one fault, through Inspect's OpenAI-compatible
provider, and checks that the run goes on to a score or stops with the right
`stopped_by`, with its budgets right and nothing waiting past its timeout.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli
from faulty_openai import (
    Drop,
    FaultyServer,
    Hang,
    NoChoices,
    Script,
    Status,
    Truncated,
    Turn,
    faulty_openai,
    rate_limited,
    tool,
)
from inspect_ai import eval
from inspect_ai.log import EvalLog, EvalSample, read_eval_log, resolve_sample_attachments
from machine_load import scaled

from labcoat.agents.research import RetryPolicy, research_agent
from labcoat.families.rebench import rebench
from labcoat.suites import resolve_target

REFERENCE = resolve_target("mini") / "rebench/prefix_sum/reference/solution/prefix_sum.py"
SOLVE = tool("write_file", path="solution/prefix_sum.py", content=REFERENCE.read_text())
SUBMIT = tool("submit", answer="vectorized")


def forever(make: Callable[[int], Turn]) -> Script:
    return make


def echo(i: int) -> Turn:
    return tool("bash", cmd=f"echo step {i}")


@dataclass
class Run:
    code: int
    log: EvalLog
    server: FaultyServer
    seconds: float
    model: str

    @property
    def sample(self) -> EvalSample:
        assert self.log.samples
        return resolve_sample_attachments(self.log.samples[0])

    @property
    def stopped_by(self) -> dict[str, Any]:
        return self.sample.store["labcoat:stopped_by"]

    def scored(self) -> bool:
        """The run reached final scoring and the scorer measured a working solution.

        (How good it was is for `labcoat validate`: on a busy machine timings wobble.)
        """
        score = self.sample.scores["rebench_scorer"]
        return score.value["raw"] is not None and score.value["normalized"] is not None

    def model_events(self) -> list[Any]:
        return [e for e in self.sample.events if e.event == "model"]

    def infos(self, key: str) -> list[Any]:
        return [
            e.data[key]
            for e in self.sample.events
            if e.event == "info" and isinstance(e.data, dict) and key in e.data
        ]


_services = itertools.count()


@pytest.fixture
def connect(monkeypatch: pytest.MonkeyPatch) -> Callable[[FaultyServer], str]:
    """Point a fresh provider name at the server (Inspect keeps models it made, by name)."""

    def point_at(server: FaultyServer) -> str:
        service = f"faulty{next(_services)}"
        monkeypatch.setenv(f"{service.upper()}_API_KEY", "sk-faulty-local")
        monkeypatch.setenv(f"{service.upper()}_BASE_URL", server.base_url)
        return f"openai-api/{service}/model"

    return point_at


@pytest.fixture
def labcoat_eval(tmp_path: Path, connect) -> Callable[..., Run]:
    """`labcoat eval mini --task prefix_sum/main --agent research` against a faulty server.

    `price` (input, output $ per million tokens) is given with `--model-cost-config`.
    """

    def run(
        script: Script,
        *args: str,
        context_window: int | None = None,
        price: tuple[float, float] | None = None,
        task: str = "prefix_sum/main",
    ) -> Run:
        log_dir = tmp_path / f"logs-{time.monotonic_ns()}"
        with faulty_openai(script, context_window=context_window) as server:
            model = connect(server)
            if price is not None:
                prices = tmp_path / "prices.yaml"
                prices.write_text(f"{model}: {{input: {price[0]}, output: {price[1]}}}\n")
                args = (*args, "--model-cost-config", str(prices))
            start = time.monotonic()
            code = run_cli(
                "eval",
                "mini",
                "--task",
                task,
                "--agent",
                "research",
                "--model",
                model,
                "--log-dir",
                str(log_dir),
                *args,
            )
            seconds = time.monotonic() - start
        [path] = log_dir.glob("*.eval")
        return Run(code, read_eval_log(str(path)), server, seconds, model)

    return run


@pytest.fixture
def agent_eval(tmp_path: Path, connect) -> Callable[..., Run]:
    """Inspect's `eval` of the prefix_sum task with a research agent of our making."""

    def run(script: Script, agent: Any, context_window: int | None = None, **kw: Any) -> Run:
        with faulty_openai(script, context_window=context_window) as server:
            model = connect(server)
            start = time.monotonic()
            [log] = eval(
                rebench(tasks="prefix_sum/main", agent="noop"),
                solver=agent,
                model=model,
                log_dir=str(tmp_path),
                display="none",
                **kw,
            )
            seconds = time.monotonic() - start
        return Run(0 if log.status == "success" else 1, log, server, seconds, model)

    return run


# --- 1. malformed bodies -------------------------------------------------------------


def test_truncated_json_bodies_are_retried_and_the_run_scores(labcoat_eval) -> None:
    run = labcoat_eval([SOLVE, Truncated(), Truncated(), SUBMIT])
    assert run.code == 0, run.sample.error
    assert run.server.done == ["turn", "truncated", "truncated", "turn"]
    assert run.stopped_by == {"type": "submitted"}
    assert run.scored()  # the reference solution, written before the faults
    # each retry is in the log: the failed attempts' model events and labcoat's records
    retries = run.sample.store["labcoat:model_retries"]
    assert [r["retry"] for r in retries] == [1, 2]
    assert all("JSONDecodeError" in r["error"] for r in retries)
    failed = [e for e in run.model_events() if e.error]
    assert len(failed) == 2 and "JSONDecodeError" in failed[0].error
    # the backoff between them is waiting, not working time
    waited = sum(r["wait_seconds"] for r in retries)
    assert run.sample.total_time - run.sample.working_time >= waited - 0.1
    # and the default per-call timeout was in force
    assert run.log.plan.config.attempt_timeout == 300


def test_persistently_unreadable_responses_end_the_sample_with_the_reason(agent_eval) -> None:
    agent = research_agent(model_retry=RetryPolicy(attempts=3, initial_wait=0.05))
    run = agent_eval([Truncated()], agent)
    assert run.log.status == "error" or run.sample.error is not None
    assert run.server.done == ["truncated"] * 3
    assert "could not be read 3 times in a row" in run.sample.error.message
    assert run.stopped_by["type"] == "error"
    assert "could not be read" in run.stopped_by["message"]


def test_a_response_without_choices_is_unreadable_retried_then_a_clear_stop(agent_eval) -> None:
    agent = research_agent(model_retry=RetryPolicy(attempts=3, initial_wait=0.05))
    run = agent_eval([NoChoices()], agent)
    assert run.server.done == ["no choices"] * 3  # retried as unreadable, then a stop
    assert run.sample.error is not None
    assert "could not be read 3 times in a row" in run.sample.error.message
    assert "answered with no choices" in run.sample.error.message
    assert "IndexError" not in run.sample.error.message


def test_a_request_the_server_rejects_ends_the_sample_at_once(labcoat_eval) -> None:
    missing = Status(404, "invalid_request_error", "model_not_found", "The model does not exist")
    run = labcoat_eval([missing])
    assert run.code == 1
    assert run.server.done == ["status 404"]  # not retried: it would never succeed
    assert run.stopped_by["type"] == "error" and "does not exist" in run.stopped_by["message"]
    assert "does not exist" in run.sample.error.message


# --- 2. context overflow ---------------------------------------------------------------


def big_output(i: int) -> Turn:
    return tool("bash", cmd=f"python3 -c \"print('{i}' * 12000)\"")


def test_context_overflow_hands_off_and_the_run_goes_on(labcoat_eval) -> None:
    script = [big_output(1), big_output(2), big_output(3), SOLVE, SUBMIT]
    run = labcoat_eval(script, context_window=8_000)
    assert run.code == 0, run.sample.error
    assert run.server.count("status 400") == 1  # OpenAI's context_length_exceeded
    [handoff] = run.sample.store["labcoat:handoffs"]
    assert handoff["trigger"] == "overflow" and handoff["note_from_shortened_context"]
    assert handoff["note"].startswith("Handoff note:")
    assert run.stopped_by == {"type": "submitted"}
    assert run.scored()
    # the full transcript, in order: task, the three big outputs, the note, what followed
    roles = [(m.role, m.text[:20]) for m in run.sample.messages]
    outputs = [i for i, (role, text) in enumerate(roles) if role == "tool" and text[:1] in "123"]
    note = next(i for i, (role, text) in enumerate(roles) if text.startswith("[Context handoff 1"))
    assert len(outputs) == 3 and outputs[-1] < note
    assert run.sample.messages[1].text.startswith("Your task")


@pytest.mark.slow  # CI runs the OpenAI-style overflow; this variant runs with `./test -m slow`
def test_a_vllm_style_length_error_is_an_overflow_too(labcoat_eval) -> None:
    vllm = Status(
        400,
        "BadRequestError",
        None,
        "This model's maximum context length is 4096 tokens. However, you requested 5210 "
        "tokens (5110 in the messages, 100 in the completion).",
    )
    run = labcoat_eval([big_output(1), vllm, SOLVE, SUBMIT])
    assert run.code == 0, run.sample.error
    [handoff] = run.sample.store["labcoat:handoffs"]
    assert handoff["trigger"] == "overflow"
    assert run.stopped_by == {"type": "submitted"}


@pytest.mark.slow  # CI runs the overflow handoff; this variant runs with `./test -m slow`
def test_an_overflow_nothing_can_shorten_stops_with_context_overflow(labcoat_eval) -> None:
    run = labcoat_eval([SUBMIT], context_window=100)  # the task statement alone is larger
    assert run.code == 0, run.sample.error
    assert run.server.done == ["status 400"]
    assert run.stopped_by["type"] == "context_overflow"
    assert "maximum context length" in run.stopped_by["message"]
    assert run.scored()  # stopped, and still scored (the starting solution works)
    assert "labcoat:handoffs" not in run.sample.store


# --- 3. responses without usage --------------------------------------------------------


def no_usage(i: int) -> Turn:
    return Turn(tool_calls=[("bash", {"cmd": f"echo step {i}"})], usage=False)


@pytest.mark.parametrize(
    ("flag", "value", "kind"),
    [
        ("--token-limit", "12000", "token"),
        # CI runs the token limit; the cost limit runs with `./test -m slow`
        pytest.param("--cost-limit", "0.05", "cost", marks=pytest.mark.slow),
    ],
)
def test_limits_hold_when_responses_carry_no_usage(
    labcoat_eval, flag: str, value: str, kind: str
) -> None:
    run = labcoat_eval(no_usage, flag, value, price=(5.0, 15.0))
    assert run.code == 0, run.sample.error
    assert run.stopped_by["type"] == kind
    assert run.sample.limit is not None and run.sample.limit.type == kind
    estimated = run.sample.store["labcoat:estimated_usage"]
    assert estimated["method"] == "estimate: 1 token per 3 bytes"  # no tiktoken cache here
    calls = len(run.server.requests)
    assert estimated["calls"] == calls
    # the counted tokens reached the log's usage and stopped the run at the right call
    usage = run.sample.model_usage[run.model]
    assert usage.input_tokens == estimated["input_tokens"] > 0
    steps = run.sample.store["labcoat:steps"]
    measure = "tokens" if kind == "token" else "cost"
    assert steps[-2][measure] < float(value) <= steps[-1][measure]
    # one warning, in the log
    [warning] = run.infos("usage_missing")
    assert "returned no token usage" in warning and "estimate" in warning


NEGATIVE = {"prompt_tokens": -7_000_000, "completion_tokens": 350, "total_tokens": -6_999_650}
SHORT_TOTAL = {"prompt_tokens": 3000, "completion_tokens": 20, "total_tokens": 0}
ABSURD = {"prompt_tokens": 10**12, "completion_tokens": 20, "total_tokens": 10**12 + 20}


@pytest.mark.parametrize(
    ("reported", "flag", "value", "kind", "reason"),
    [
        (NEGATIVE, "--token-limit", "12000", "token", "input_tokens is negative"),
        (NEGATIVE, "--cost-limit", "0.05", "cost", "input_tokens is negative"),
        # CI runs the negative usage; the other kinds run with `./test -m slow`
        pytest.param(
            SHORT_TOTAL,
            "--token-limit",
            "12000",
            "token",
            "total_tokens (0) is less than",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ABSURD, "--token-limit", "12000", "token", "is absurd", marks=pytest.mark.slow
        ),
    ],
)
def test_limits_hold_when_reported_usage_is_unusable(
    labcoat_eval, reported: dict[str, int], flag: str, value: str, kind: str, reason: str
) -> None:
    def script(i: int) -> Turn:
        return Turn(tool_calls=[("bash", {"cmd": f"echo step {i}"})], usage=reported)

    run = labcoat_eval(script, flag, value, price=(5.0, 15.0))
    assert run.code == 0, run.sample.error
    assert run.stopped_by["type"] == kind
    assert run.sample.limit is not None and run.sample.limit.type == kind
    # every call was counted offline: the reported usage never reached the totals
    estimated = run.sample.store["labcoat:estimated_usage"]
    calls = len(run.server.requests)
    assert estimated["calls"] == estimated["unusable"] == calls
    usage = run.sample.model_usage[run.model]
    assert usage.input_tokens == estimated["input_tokens"] > 0
    assert 0 < usage.total_tokens < 1_000_000
    assert usage.total_cost is not None and usage.total_cost > 0
    steps = run.sample.store["labcoat:steps"]
    measure = "tokens" if kind == "token" else "cost"
    assert steps[-2][measure] < float(value) <= steps[-1][measure]
    # what the server said is kept, with the reason, on each call's output
    outputs = [e.output for e in run.model_events() if not e.error]
    discarded = outputs[0].metadata["labcoat:discarded_usage"]
    assert reason in discarded["reason"]
    assert discarded["output_tokens"] == reported["completion_tokens"]
    # one warning, in the log, saying why
    [warning] = run.infos("usage_unusable")
    assert "reported unusable token usage" in warning and reason in warning
    assert not run.infos("usage_missing")


@pytest.mark.slow  # CI runs the limits without provider usage; this variant runs with `./test -m slow`
def test_the_usage_handoff_fires_without_provider_usage(agent_eval) -> None:
    def script(i: int) -> Turn:
        turn = big_output(i)
        turn.usage = False
        return turn if i < 6 else Turn(tool_calls=[("submit", {"answer": "x"})], usage=False)

    run = agent_eval(script, research_agent(context_window_tokens=20_000))
    assert run.code == 0, run.sample.error
    handoffs = run.sample.store["labcoat:handoffs"]
    assert handoffs and handoffs[0]["trigger"] == "usage"
    assert handoffs[0]["tokens_at_handoff"] > 0.85 * 20_000
    assert run.stopped_by == {"type": "submitted"}


# --- 4. the message limit --------------------------------------------------------------


def test_the_message_limit_holds_while_the_agent_runs(labcoat_eval) -> None:
    run = labcoat_eval(forever(echo), "--message-limit", "20")
    assert run.code == 0, run.sample.error
    assert run.stopped_by["type"] == "message" and run.stopped_by["limit"] == 20
    assert run.sample.limit is not None and run.sample.limit.type == "message"
    # system + task + 9 × (call, result) = 20 messages; a 10th call would exceed it
    assert len(run.server.requests) == 9
    assert len(run.sample.messages) == 20  # the whole transcript is kept
    assert run.scored()


@pytest.mark.slow  # CI runs the message limit while the agent runs; this variant runs with `./test -m slow`
def test_the_message_limit_counts_messages_across_handoffs(agent_eval) -> None:
    run = agent_eval(forever(big_output), research_agent(message_limit=14), context_window=8_000)
    assert run.code == 0, run.sample.error
    assert run.sample.store["labcoat:handoffs"]  # the conversation was handed off...
    assert run.stopped_by["type"] == "message"  # ...and the run still stopped at 14
    assert len(run.sample.messages) >= 14


# --- 5. what stopped the run ------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "kind"),
    [
        ("--time-limit", "20", "time"),
        # CI runs the time limit; the working limit runs with `./test -m slow`
        pytest.param("--working-limit", "20", "working", marks=pytest.mark.slow),
    ],
)
def test_time_limits_are_named_as_what_stopped_the_run(
    labcoat_eval, flag: str, value: str, kind: str
) -> None:
    # scaling_law's grader is a table look-up: quick within the half of the time limit
    # that Inspect leaves final scoring (prefix_sum's timing runs may need more). The
    # limit covers the task's setup too: on a loaded machine it is stretched, so that
    # the agent still gets turns before it fires
    value = str(scaled(int(value)))
    run = labcoat_eval(
        forever(lambda i: tool("bash", cmd="sleep 1")), flag, value, task="scaling_law/main"
    )
    assert run.code == 0, run.sample.error
    assert run.stopped_by["type"] == kind and run.stopped_by["limit"] == int(value)
    assert run.sample.limit is not None and run.sample.limit.type == kind
    assert run.scored()
    assert len(run.sample.messages) > 4  # the transcript survived the cancellation


# --- 6. hung responses ------------------------------------------------------------------


def test_a_hung_call_is_abandoned_at_the_model_timeout(labcoat_eval) -> None:
    run = labcoat_eval([Hang(3600), SOLVE, SUBMIT], "--model-timeout", "3")
    assert run.code == 0, run.sample.error
    assert run.server.done == ["hang", "turn", "turn"]
    assert run.log.plan.config.attempt_timeout == 3
    assert run.seconds < 120  # not the client's 600 s
    [abandoned] = [e for e in run.model_events() if e.error]
    assert "timed out" in abandoned.error.lower() or "timeout" in abandoned.error.lower()
    # the 3 s the call hung (and the backoff after it) are waiting, not working time
    assert run.sample.total_time - run.sample.working_time >= 3
    assert run.stopped_by == {"type": "submitted"}


# --- 429, 5xx, dropped connections -------------------------------------------------------


def test_rate_limits_server_errors_and_dropped_connections_are_retried(labcoat_eval) -> None:
    faults = [rate_limited(), Status(500), Status(503), Drop(), Status(502), rate_limited()]
    run = labcoat_eval([*faults, SOLVE, SUBMIT])
    assert run.code == 0, run.sample.error
    assert run.server.done[:6] == [
        "status 429",
        "status 500",
        "status 503",
        "drop",
        "status 502",
        "status 429",
    ]
    assert run.stopped_by == {"type": "submitted"}
    assert run.scored()
    # every request the server saw is in the log: as a model event, or one of its retries
    events = run.model_events()
    assert sum(1 + (e.retries or 0) for e in events) == len(run.server.requests)
    assert any(e.error for e in events)
    # waiting on retries is not working time
    assert run.sample.working_time < run.sample.total_time

"""The research agent driven by a scripted model through labcoat's tools, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.model import get_model
from scripted_models import scripted_call

from labcoat.families.rebench import rebench
from labcoat.suites import resolve_target

REFERENCE = resolve_target("mini") / "rebench/prefix_sum/reference/solution/prefix_sum.py"


def _sample(log):
    assert log.status == "success", log.error
    [sample] = log.samples
    return sample


def test_scripted_model_solves_prefix_sum(tmp_path: Path) -> None:
    outputs = [
        scripted_call("read_file", path="solution/prefix_sum.py"),
        scripted_call("write_file", path="solution/prefix_sum.py", content=REFERENCE.read_text()),
        scripted_call("bash", cmd="python solution/check.py"),
        scripted_call("score"),
        scripted_call("submit", answer="vectorized with numpy"),
    ]
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = eval(
        rebench(tasks="prefix_sum/main", agent="research"),
        model=model,
        log_dir=str(tmp_path),
        display="none",
    )
    sample = _sample(log)
    tool_results = {m.function: m.text for m in sample.messages if m.role == "tool"}
    assert "correct" in tool_results["bash"]
    assert "runtime_seconds" in tool_results["score"]
    score = sample.scores["rebench_scorer"]
    # a valid (correct) solution was scored; how fast is a matter for validate, not this test
    assert score.value["raw"] is not None and score.value["normalized"] > 0
    steps = sample.store["labcoat:steps"]
    assert len(steps) == 5 and steps[-1]["tokens"] == 5000
    assert sample.store["labcoat:stopped_by"] == {"type": "submitted"}
    # the intermediate score the agent asked for is in the log with its time and tokens,
    # after the score of the starting state (taken before the agent's first step)
    [start, first, last] = score.metadata["score_log"]
    assert start["kind"] == "start" and start["tokens"] == 0
    assert last["final"] is True
    assert first["final"] is False and first["tokens"] == 4000 and first["elapsed_seconds"] > 0


@pytest.mark.slow  # CI runs the token limit in test_model_faults; this variant runs with `./test -m slow`
def test_token_budget_stops_the_run_and_says_so(tmp_path: Path) -> None:
    outputs = [scripted_call("bash", cmd=f"echo step {i}") for i in range(10)]
    model = get_model("mockllm/model", custom_outputs=outputs)
    from labcoat.agents.research import research_agent

    [log] = eval(
        rebench(tasks="prefix_sum/main", agent="noop"),
        solver=research_agent(token_limit=2500),
        model=model,
        log_dir=str(tmp_path),
        display="none",
    )
    sample = _sample(log)
    stopped = sample.store["labcoat:stopped_by"]
    assert stopped["type"] == "token" and stopped["limit"] == 2500
    # the third call crosses 2,500 tokens; no fourth call is made
    assert sum(1 for e in sample.events if e.event == "model") == 3
    assert "rebench_scorer" in sample.scores  # a stopped run is still scored


@pytest.mark.slow  # CI runs the time limit in test_model_faults; this variant runs with `./test -m slow`
def test_time_budget_stops_a_long_call(tmp_path: Path) -> None:
    outputs = [scripted_call("bash", cmd="sleep 30", timeout=60)] * 3
    model = get_model("mockllm/model", custom_outputs=outputs)
    from labcoat.agents.research import research_agent

    [log] = eval(
        rebench(tasks="prefix_sum/main", agent="noop"),
        solver=research_agent(time_limit=3),
        model=model,
        log_dir=str(tmp_path),
        display="none",
    )
    stopped = _sample(log).store["labcoat:stopped_by"]
    assert stopped["type"] == "time"


def test_the_api_key_never_reaches_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-labcoat-test-key-0451")
    outputs = [
        scripted_call("bash", cmd="env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"),
        scripted_call("python", code="import os; print(dict(os.environ))"),
        scripted_call("submit", answer="done"),
    ]
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = eval(
        rebench(tasks="prefix_sum/main", agent="research"),
        model=model,
        log_dir=str(tmp_path),
        display="none",
    )
    sample = _sample(log)
    outputs_seen = "\n".join(m.text for m in sample.messages if m.role == "tool")
    assert "PATH=" in outputs_seen  # the environment really was printed
    assert "sk-labcoat-test-key-0451" not in outputs_seen

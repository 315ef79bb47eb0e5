"""Real runs of the command in a subprocess, as a user would: --json keeps stdout pure, one
writer per log folder, the offline scripted model, Inspect's entry points."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from labcoat._providers import extra_for, missing_extras, models_in

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bwrap (bubblewrap)")
INSPECT = str(Path(sys.executable).with_name("inspect"))


def labcoat(*args: str, timeout: int = 600, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labcoat", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


@needs_bwrap
def test_eval_json_is_pure_json_on_stdout(tmp_path: Path) -> None:
    run = labcoat(
        "eval", "mini", "--task", "adaptive-huber", "--agent", "oracle",
        "--log-dir", str(tmp_path / "logs"), "--json",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    [row] = json.loads(run.stdout)  # Inspect's display went to stderr
    assert row["task"] == "adaptive-huber" and row["normalized"] == 1.0
    assert "adaptive-huber" in run.stderr or "researchcodebench" in run.stderr


@needs_bwrap
def test_validate_json_is_pure_json_and_quiet_and_resumes(tmp_path: Path) -> None:
    logs = tmp_path / "v"
    command = ("validate", "mini", "--task", "prefix_sum/main", "--task", "adaptive-huber",
               "--log-dir", str(logs), "--json")  # fmt: skip
    run = labcoat(*command)
    verdicts = json.loads(run.stdout)
    assert [v["task"] for v in verdicts] == ["prefix_sum/main", "adaptive-huber"]
    # a noop run has no raw score: Inspect's metrics must not complain about it
    assert "Unable to convert value to float" not in run.stderr
    # its two parts (one timed) are eval sets in folders of their own: the same command
    # again finds each its own logs, finished, and runs nothing
    written = sorted(logs.rglob("*.eval"))
    assert {p.parent.name for p in written} == {"concurrent", "timing-sensitive"}
    again = labcoat(*command)
    assert again.returncode == run.returncode, again.stderr[-2000:]
    assert json.loads(again.stdout) == verdicts
    assert sorted(logs.rglob("*.eval")) == written


def test_list_json_is_pure_json() -> None:
    run = labcoat("list", "mini", "--json")
    assert run.returncode == 0
    assert {e["family"] for e in json.loads(run.stdout)} == {
        "rebench", "researchcodebench", "paperbench", "researchgym"
    }  # fmt: skip


def test_a_log_folder_in_use_is_refused_with_one_line(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    holder = subprocess.Popen(
        [
            sys.executable, "-c",
            "import sys, time\n"
            "from labcoat._run._logdir import log_dir_lock\n"
            f"with log_dir_lock({str(logs)!r}):\n"
            "    print('held', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        run = labcoat("eval", "mini", "--task", "adaptive-huber", "--agent", "oracle",
                      "--log-dir", str(logs))  # fmt: skip
        assert run.returncode == 2
        [line] = run.stderr.strip().splitlines()
        assert "in use by another labcoat run" in line and f"pid {holder.pid}" in line
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone (killed, not cleaned up): the folder is free again
    from labcoat._run._logdir import log_dir_lock

    with log_dir_lock(str(logs)):
        pass


def test_a_run_that_writes_nothing_leaves_no_log_folder(tmp_path: Path) -> None:
    from labcoat._run._logdir import LOCK_NAME, log_dir_lock

    made = tmp_path / "new"
    with log_dir_lock(str(made)):
        assert (made / LOCK_NAME).is_file()  # held while the run lasts
    assert not made.exists()
    # a folder that was there stays, and so does one the run wrote into
    with log_dir_lock(str(tmp_path)):
        pass
    written = tmp_path / "written"
    with log_dir_lock(str(written)):
        (written / "a.eval").write_bytes(b"")
    assert tmp_path.is_dir() and (written / "a.eval").is_file()


@needs_bwrap
def test_the_research_agent_runs_offline_on_the_scripted_model(tmp_path: Path) -> None:
    run = labcoat(
        "eval", "mini", "--task", "prefix_sum/main", "--agent", "research",
        "--model", "labcoat/scripted", "--log-dir", str(tmp_path / "logs"), "--json",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    [row] = json.loads(run.stdout)
    assert row["runs"] == 1 and row["errors"] == 0
    [info] = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info.name)
    [sample] = log.samples or []
    calls = [c.function for m in sample.messages for c in (getattr(m, "tool_calls", None) or [])]
    assert calls[:2] == ["bash", "score"]
    assert "the script is over" in sample.messages[-1].text  # then it submitted
    usage = log.stats.model_usage["labcoat/scripted"]
    assert usage.input_tokens > 0 and usage.output_tokens > 0  # counted without tiktoken


def test_a_script_is_played_turn_by_turn(tmp_path: Path) -> None:
    import anyio
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, get_model
    from inspect_ai.tool import ToolInfo, ToolParams

    script = tmp_path / "turns.yaml"
    script.write_text("- tool: bash\n  arguments: {cmd: ls}\n- text: thinking\n")
    model = get_model("labcoat/scripted", script=str(script))
    tools = [ToolInfo(name=n, description=n, parameters=ToolParams()) for n in ("bash", "submit")]

    async def turns() -> list:
        history: list = [ChatMessageUser(content="go")]
        out = []
        for _ in range(3):
            output = await model.generate(history, tools=tools)
            out.append(output)
            history.append(ChatMessageAssistant(content=output.completion or "x"))
        return out

    first, second, third = anyio.run(turns)
    assert first.message.tool_calls[0].function == "bash"
    assert second.completion == "thinking"
    assert third.message.tool_calls[0].function == "submit"  # the script is over
    assert all(o.usage and o.usage.total_tokens > 0 for o in (first, second, third))


def test_the_provider_a_model_needs() -> None:
    assert extra_for("openai/gpt-5") == "openai"
    assert extra_for("together/meta-llama") == "openai"  # an OpenAI-compatible API
    assert extra_for("anthropic/claude-sonnet-4-5") == "anthropic"
    assert extra_for("grader=google/gemini-2.5-pro") == "google"
    assert extra_for("labcoat/scripted") is None and extra_for("mockllm/model") is None
    args = ["eval", "mini", "--model", "anthropic/x", "--model-role=grader=groq/y"]
    assert models_in(args) == ["anthropic/x", "grader=groq/y"]
    assert set(missing_extras(args)) <= {"anthropic", "groq"}


def test_inspect_entry_points_say_one_line() -> None:
    """`inspect eval labcoat/<family> -T ...`: Inspect prints a PrerequisiteError as its
    message alone; the exit code is Inspect's own (1)."""
    cases = [
        ("researchcodebench", "with_paper=perhaps", "with_paper"),
        ("researchcodebench", "mode=nope", "mode"),
        ("paperbench", "judge=nope", "judge"),
        ("rebench", "agent=bogus", "bogus"),
        ("rebench", "target=/nowhere", "/nowhere"),
        ("researchgym", "sandbox=local", "bwrap"),
    ]
    for family, arg, says in cases:
        run = subprocess.run(
            [INSPECT, "eval", f"labcoat/{family}", "-T", arg, "--model", "none/none"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        text = run.stdout + run.stderr
        assert run.returncode != 0 and "Traceback" not in text, text[-2000:]
        lines = [line for line in text.splitlines() if line.strip()]
        assert len(lines) <= 2 and says in " ".join(lines), text  # rich may wrap the line


@needs_bwrap
def test_validate_passes_the_bundled_papers_unflagged(tmp_path: Path) -> None:
    """The README's main command on one family: the noop's empty repository fails its
    checks without looking like a fabrication (a flagged noop run fails validate)."""
    run = labcoat(
        "validate", "mini", "--family", "paperbench", "--log-dir", str(tmp_path / "v"), "--json"
    )
    verdicts = json.loads(run.stdout)
    assert {v["task"] for v in verdicts} == {"spectral-shrinkage", "tail-averaged-sgd"}
    assert all(v["passed"] for v in verdicts), [v["problems"] for v in verdicts]
    assert run.returncode == 0, run.stderr[-3000:]

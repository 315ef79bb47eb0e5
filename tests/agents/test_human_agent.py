"""`--agent human`: a scripted person types into real terminals, in real sandboxes, and the
protected grader scores what they leave (docs/humans.md)."""

from __future__ import annotations

import glob
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import EvalSample, read_eval_log

from labcoat.agents.human._record import RECORDING_KEY, SUMMARY_KEY
from labcoat.families._score import normalized_of
from labcoat.integrity import run_flags
from tests.human_typist import LABCOAT, Typist

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bwrap sandboxes are Linux's")
MINI = Path(__file__).parents[2] / "src/labcoat/suites/mini/rebench"


def only_sample(log_dir: Path) -> EvalSample:
    logs = glob.glob(str(log_dir / "**/*.eval"), recursive=True)
    assert len(logs) == 1, logs
    log = read_eval_log(logs[0])
    assert log.samples and len(log.samples) == 1
    return log.samples[0]


def bash_calls(sample: EvalSample) -> list[tuple[str, str]]:
    """(command, its output) as the log keeps them: an agent's `bash` calls."""
    outputs = {m.tool_call_id: m.text for m in sample.messages if m.role == "tool"}
    return [
        (call.arguments.get("cmd", ""), outputs.get(call.id, ""))
        for m in sample.messages
        if m.role == "assistant"
        for call in getattr(m, "tool_calls", None) or []
        if call.function == "bash"
    ]


def test_a_dropped_connection_only_detaches_and_the_answer_is_graded(tmp_path: Path) -> None:
    """scaling_law (deterministic): the person's answer scores exactly as the oracle's."""
    eval_run = subprocess.Popen(
        [
            LABCOAT,
            "eval",
            "mini",
            "--agent",
            "human",
            "--task",
            "scaling_law/main",
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = Typist("attach", "--wait", "240", str(tmp_path / "logs"))
        first.read_until("[task] ", timeout=240)
        first.type("export REMEMBERED=still-here")
        first.hang_up()  # the connection drops: the shell and the eval go on

        again = Typist("attach", "--wait", "30", str(tmp_path / "logs"))
        again.read_until("[task] ")  # the screen's recent output is replayed
        assert "still-here" in again.type('echo "$REMEMBERED"')
        assert "paused" in again.type("task stop", wait_for="[paused] ")
        assert "running" in again.type("task start")
        again.type("""echo '{"width": 362}' > solution/answer.json""")
        again.type("task score")
        again.type("task note picked the best width in the table")
        again.type("task submit", wait_for="[y/N]")
        again.type("y", wait_for="the session is over")
        again.wait(60)
        output, _ = eval_run.communicate(timeout=600)
    finally:
        eval_run.kill()
    assert eval_run.returncode == 0, output
    assert "Traceback" not in output and "Exception in callback" not in output, output

    sample = only_sample(tmp_path / "logs")
    assert normalized_of(sample.scores["rebench_scorer"]) == pytest.approx(1.0, abs=1e-3)
    calls = dict(bash_calls(sample))
    assert calls['echo "$REMEMBERED"'].strip() == "still-here"
    assert """echo '{"width": 362}' > solution/answer.json""" in calls
    assert any(
        c.function == "score" for m in sample.messages for c in getattr(m, "tool_calls", None) or []
    )
    summary = sample.store[SUMMARY_KEY]
    assert summary["ended_by"] == "submitted"
    assert summary["attaches"] == 2
    assert len(summary["pauses"]) == 1 and "resumed" in summary["pauses"][0]
    assert 0 < summary["working_seconds"] <= summary["clock_seconds"]
    assert "still-here" in sample.store[RECORDING_KEY]
    notes = [
        e for e in sample.events if e.event == "info" and (e.data or {}).get("human") == "note"
    ]
    assert notes and "best width" in notes[0].data["text"]
    assert run_flags(sample) == []  # an honest session: detach, pause, score, submit


def _default_signals() -> None:
    """As from a terminal: a runner started in the background ignores SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_session_ends_and_the_rerun_offers_the_task_again(tmp_path: Path) -> None:
    command = [LABCOAT, "eval", "mini", "--agent", "human", "--task", "scaling_law/main"]
    command += ["--log-dir", str(tmp_path / "logs")]
    first = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        preexec_fn=_default_signals,
    )
    try:
        person = Typist("attach", "--wait", "240", str(tmp_path / "logs"))
        person.read_until("[task] ", timeout=240)
        person.type("""echo '{"width": 45}' > solution/answer.json""")
        first.send_signal(signal.SIGINT)  # the eval's Ctrl-C
        person.read_until("the session is over", timeout=120)
        assert person.wait(60) == 0
        _, err = first.communicate(timeout=300)
    finally:
        first.kill()
    assert first.returncode == 130, err[-2000:]

    second = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    try:
        person = Typist("attach", "--wait", "240", str(tmp_path / "logs"))
        person.read_until("[task] ", timeout=240)
        # the re-run starts the sample again in a fresh sandbox: the first answer is gone
        assert '"width": 45' not in person.type("cat solution/answer.json")
        person.type("""echo '{"width": 362}' > solution/answer.json""")
        person.type("task submit", wait_for="[y/N]")
        person.type("y", wait_for="the session is over")
        output, _ = second.communicate(timeout=600)
    finally:
        second.kill()
    assert second.returncode == 0, output
    logs = [read_eval_log(p) for p in glob.glob(str(tmp_path / "logs/**/*.eval"), recursive=True)]
    done = [s for log in logs for s in log.samples or [] if s.scores]
    assert len(done) == 1 and done[0].store[SUMMARY_KEY]["ended_by"] == "submitted"
    assert normalized_of(done[0].scores["rebench_scorer"]) == pytest.approx(1.0, abs=1e-3)


def test_one_command_at_a_terminal_gives_the_oracles_score(tmp_path: Path) -> None:
    """prefix_sum/main from `labcoat eval ... --agent human` at a terminal: the person
    writes the reference's solution and scores as the oracle does (≥ validate's bound)."""
    solution = (MINI / "prefix_sum/reference/solution/prefix_sum.py").read_text()
    person = Typist(
        "eval", "mini", "--agent", "human", "--task", "prefix_sum/main",
        "--log-dir", str(tmp_path / "logs"),
    )  # fmt: skip
    person.read_until("[task] ", timeout=300)
    person.type(f"cat > solution/prefix_sum.py <<'END'\n{solution}END")
    assert "Traceback" not in person.type("python solution/check.py")
    # a timed score pauses the person's shell and jobs (sandbox.md); both go on after it
    person.type("(while true; do date +%s%N > /tmp/tick; sleep 0.05; done) &")
    assert "runtime_seconds" in person.type("task score", timeout=300)
    ticks = person.type("cat /tmp/tick; sleep 0.5; cat /tmp/tick").split()
    assert len({t for t in ticks if t.isdigit()}) == 2, ticks  # the job ticks again
    person.type("kill %1")
    person.type("task submit", wait_for="[y/N]")
    person.type("y", wait_for="the session is over")
    assert person.wait(600) == 0, person.screen
    # the person's terminal shows the result table, and no traceback before it
    assert "Traceback" not in person.screen and "Exception in callback" not in person.screen, (
        person.screen
    )
    sample = only_sample(tmp_path / "logs")
    assert normalized_of(sample.scores["rebench_scorer"]) >= 0.9
    assert any("cat > solution/prefix_sum.py" in cmd for cmd, _ in bash_calls(sample))
    assert run_flags(sample) == []  # a pasted heredoc, a job, a timed score: no flag

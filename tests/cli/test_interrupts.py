"""Ctrl-C and SIGTERM, sent for real to a real `labcoat eval` running real sandboxes.

The agent is `labcoat/scripted` playing one bash call that sleeps until a deadline: the
first run is interrupted while it sleeps; the resumed run (the same command, so the same
eval set) finds the deadline passed and finishes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from labcoat.sandbox._disk import release_mounts
from tests.human_typist import Typist

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bwrap (bubblewrap)")

STOP_TIMEOUT_S = 90  # the run must end this soon after the signal


def _command(log_dir: Path, script: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "labcoat",
        "eval",
        "mini",
        "--family",
        "researchcodebench",
        "--task",
        "adaptive-huber",
        "-T",
        "mode=agent",
        "--agent",
        "research",
        "--model",
        "labcoat/scripted",
        "-M",
        f"script={script}",
        "--max-samples",
        "1",
        "--log-dir",
        str(log_dir),
        "--json",
    ]


def _sleep_script(tmp_path: Path, seconds_from_now: float) -> Path:
    deadline = time.time() + seconds_from_now
    script = tmp_path / "sleepy.yaml"
    cmd = f"python3 -c 'import time; time.sleep(max(0, {deadline:.0f} - time.time()))'"
    script.write_text(f'- tool: bash\n  arguments: {{cmd: "{cmd}", timeout: 600}}\n')
    return script


def _wait_for_sleep(proc: subprocess.Popen, marker: str, timeout: float = 240) -> None:
    """Until the agent's sleeping command runs in a sandbox."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, "the run ended before it was interrupted"
        found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        if found.stdout.strip():
            return
        time.sleep(0.5)
    raise AssertionError("the agent's command never started")


def _statuses(log_dir: Path) -> list[str]:
    return [
        read_eval_log(info.name, header_only=True).status
        for info in list_eval_logs(str(log_dir), recursive=False)
    ]


def _default_signals() -> None:
    """The run starts with the default dispositions, as from a terminal: a test runner
    started in the background (`cmd &` in a script) ignores SIGINT, and its children
    would inherit that (Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _interrupt(
    tmp_path: Path, sig: int, deadline_s: float
) -> tuple[subprocess.CompletedProcess, list[str], Path, Path, dict[str, str]]:
    log_dir = tmp_path / "logs"
    script = _sleep_script(tmp_path, deadline_s)
    sandboxes = tmp_path / "sandboxes"  # this run's own: other runs may share the machine
    env = {**os.environ, "LABCOAT_SANDBOX_DIR": str(sandboxes)}
    proc = subprocess.Popen(
        _command(log_dir, script),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_signals,
    )
    marker = script.read_text().split("max(0, ")[1].split(" ")[0]  # the deadline: unique
    try:
        _wait_for_sleep(proc, marker)
        started = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=STOP_TIMEOUT_S)
        assert time.monotonic() - started < STOP_TIMEOUT_S
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    # the sandboxes are torn down: the command is gone, and so are the sample folders
    assert not subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout
    assert not list(sandboxes.glob("sample-*"))
    return result, _statuses(log_dir), log_dir, script, env


def test_ctrl_c_cancels_and_says_so(tmp_path: Path) -> None:
    result, statuses, log_dir, _, _ = _interrupt(tmp_path, signal.SIGINT, deadline_s=600)
    assert result.returncode == 130, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("labcoat: interrupted") and str(log_dir) in last
    assert "Traceback" not in result.stderr
    assert result.stdout == ""  # --json: nothing pretends to be a result
    assert "cancelled" in statuses


def test_sigterm_cancels_and_exits_143(tmp_path: Path) -> None:
    result, statuses, _, _, _ = _interrupt(tmp_path, signal.SIGTERM, deadline_s=600)
    assert result.returncode == 143, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith("labcoat: interrupted")
    assert "Traceback" not in result.stderr
    assert "cancelled" in statuses


@pytest.mark.slow
def test_a_rerun_after_ctrl_c_finishes_the_rest(tmp_path: Path) -> None:
    # the first run sleeps until a deadline and is interrupted; the same command again
    # (the same eval set) finds it passed and finishes every sample
    result, _, log_dir, script, env = _interrupt(tmp_path, signal.SIGINT, deadline_s=150)
    assert result.returncode == 130
    rerun = subprocess.run(
        _command(log_dir, script), capture_output=True, text=True, timeout=900, env=env
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    [row] = json.loads(rerun.stdout)
    assert row["runs"] == 7 and row["errors"] == 0
    assert _statuses(log_dir).count("success") >= 1


def test_a_second_ctrl_c_ends_the_process_at_once(tmp_path: Path) -> None:
    # the first Ctrl-C starts the orderly stop; the second, sent while it runs, must end
    # the process whatever is running then (cleanup code can swallow KeyboardInterrupt)
    script = _sleep_script(tmp_path, 600)
    sandboxes = tmp_path / "sandboxes"
    env = {**os.environ, "LABCOAT_SANDBOX_DIR": str(sandboxes)}
    proc = subprocess.Popen(
        _command(tmp_path / "logs", script),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_signals,
    )
    marker = script.read_text().split("max(0, ")[1].split(" ")[0]
    try:
        _wait_for_sleep(proc, marker)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=STOP_TIMEOUT_S)
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        release_mounts(sandboxes)  # the next run's sweep would: a disk image stays mounted
    assert proc.returncode == 130, err[-2000:]
    # the orderly stop (a second or so) was still running when the second came
    assert err.strip().splitlines()[-1].startswith("labcoat: interrupted again: exiting now")
    assert "Traceback" not in err
    # the sandbox dies with the process (its folder is swept by the next run)
    end = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout:
        assert time.monotonic() < end, "the agent's command outlived the process"
        time.sleep(0.2)


def test_a_ctrl_c_on_the_way_out_says_so_too() -> None:
    # after the first interrupt's stop, while labcoat prints its last line and exits: a
    # second Ctrl-C there ended the process without a word
    code = (
        "import os, signal, time\n"
        "from labcoat._util.exit_now import exit_at_another_interrupt\n"
        "exit_at_another_interrupt(130)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(30)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        preexec_fn=_default_signals,
    )  # fmt: skip
    assert run.returncode == 130, run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("labcoat: interrupted again: exiting now")


def test_ctrl_c_during_validate_says_interrupted_and_nothing_else(tmp_path: Path) -> None:
    # Inspect, interrupted, reports an empty eval set as "Completed all tasks ...
    # successfully", and samples torn down log "Transcript subscriber failed" tracebacks
    sandboxes = tmp_path / "sandboxes"
    log_dir = tmp_path / "logs"
    command = ["validate", "mini", "--family", "researchcodebench", "--log-dir", str(log_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "labcoat", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LABCOAT_SANDBOX_DIR": str(sandboxes)},
        preexec_fn=_default_signals,
    )
    try:
        end = time.monotonic() + 240
        # the eval set has started (the log) and samples run (the preflight checks
        # before it use sandboxes too)
        while not (list(log_dir.rglob("*.eval")) and list(sandboxes.glob("sample-*"))):
            assert proc.poll() is None, "validate ended before it was interrupted"
            assert time.monotonic() < end, "no sample started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=STOP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-2000:]
    said = out + err
    assert "successfully" not in said
    assert "Transcript subscriber failed" not in said and "Traceback" not in said
    assert err.strip().splitlines()[-1].startswith("labcoat: interrupted")
    assert "validate: oracle" not in said  # no verdict table for a run that didn't finish
    assert "cancelled" in _statuses(log_dir / "concurrent")


def _wait_at_terminal(person: Typist, marker: str, timeout: float = 240) -> None:
    """Until the agent's sleeping command runs, reading the screen meanwhile (a full pty
    would stop the eval)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        person.drain(0.5)
        ended = os.waitid(os.P_PID, person.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        assert ended is None, f"the run ended before it was interrupted:\n{person.screen[-3000:]}"
        if subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout.strip():
            return
    raise AssertionError(f"the agent's command never started:\n{person.screen[-3000:]}")


def test_ctrl_c_at_a_terminal_says_how_to_resume_and_the_rerun_says_what_it_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a real terminal (a pty) Inspect's full-screen display reads Ctrl-C as a key and
    cancels the run itself. Before: labcoat's `interrupted: … run the same command again`
    never appeared; Inspect's summary did (with `inspect eval-retry …` once a sample was
    done, which bypasses labcoat's resume), once with a control server's CancelledError
    traceback; a re-run said nothing of what it resumed."""
    monkeypatch.setenv("TERM", "xterm-256color")  # as in tmux: the full-screen display
    monkeypatch.setenv("LABCOAT_SANDBOX_DIR", str(tmp_path / "sandboxes"))
    log_dir = tmp_path / "logs"
    script = _sleep_script(tmp_path, 600)
    marker = script.read_text().split("max(0, ")[1].split(" ")[0]
    args = _command(log_dir, script)[3:-1]  # `eval …` without --json: what a person types
    for rerun in (False, True):
        person = Typist(*args)
        try:
            if rerun:  # the same command again: it says what it resumes, then runs
                person.read_until(f"resuming: 0 of 7 samples already done in {log_dir}", 240)
            _wait_at_terminal(person, marker)
            person.press(b"\x03")
            code = person.wait(STOP_TIMEOUT_S)
        finally:
            person.close()
        screen = person.screen
        assert "labcoat: interrupted: " in screen, screen[-3000:]
        assert "run the same command again" in screen and code == 130, screen[-3000:]
        assert "eval-retry" not in screen and "Resume task with" not in screen
        assert "Traceback" not in screen and "Unknown child process" not in screen
        assert rerun or "resuming:" not in screen  # a first run has nothing to resume

"""`--agent human` against a person who read the code (issue 44, round four): a pause that
stopped only the clock, a shell whose hooks and screen hid a command, markers printed to
forge a command, a second "terminal server" on the control socket. Each runs the real
path: `labcoat eval --agent human` in a bwrap sandbox, `labcoat attach` typed into by
`tests/human_typist.py`, the protected grader scoring what is left."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from labcoat.agents.human._record import RECORDING_KEY, SUMMARY_KEY
from labcoat.families._score import normalized_of
from labcoat.integrity import run_flags
from tests.agents.test_human_agent import bash_calls, only_sample
from tests.human_typist import LABCOAT, Typist

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bwrap sandboxes are Linux's")
ANSWER = """echo '{"width": 362}' > solution/answer.json"""


def _eval(log_dir: Path) -> subprocess.Popen[str]:
    command = [LABCOAT, "eval", "mini", "--agent", "human", "--task", "scaling_law/main"]
    return subprocess.Popen(
        [*command, "--log-dir", str(log_dir)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _submit(person: Typist, eval_run: subprocess.Popen[str]) -> None:
    person.type("task submit", wait_for="[y/N]")
    person.type("y", wait_for="the session is over")
    person.wait(60)
    output, _ = eval_run.communicate(timeout=600)
    assert eval_run.returncode == 0, output


def test_no_work_goes_on_while_the_clock_is_paused(tmp_path: Path) -> None:
    """Attack: `task stop`, then go on working (a background job, commands) off the clock.
    A pause freezes every process of the sample: the job's ticks stop for the pause, a
    command typed meanwhile never runs, and the clock records the pause. Before: the job
    ticked on through the pause and the command ran (round four: 143 s of work, 8 s of a
    60 s budget recorded)."""
    eval_run = _eval(tmp_path / "logs")
    try:
        person = Typist("attach", "--wait", "240", str(tmp_path / "logs"))
        person.read_until("[task] ", timeout=240)
        person.type("(while true; do date +%s%N >> /tmp/ticks; sleep 0.05; done) &")
        person.type("sleep 0.5")
        assert "paused" in person.type("task stop", wait_for="[paused] ", timeout=30)
        shown = person.type("echo worked > /tmp/off-the-clock", wait_for="[paused] ")
        assert "task start" in shown  # the frozen terminal takes only `task start`
        time.sleep(3)
        assert "running" in person.type("task start", timeout=30)
        person.type("sleep 0.5; kill %1")
        gaps = person.type(
            "sort -n /tmp/ticks | awk 'NR>1 && $1-p>m {m=$1-p} {p=$1} END {print \"gap\", m/1e9}'"
        )
        gap = float(gaps.split("gap ", 1)[1].split()[0])
        assert gap >= 2.5, gaps  # frozen for the whole pause (ticks come every ~0.05 s)
        assert "No such file" in person.type("cat /tmp/off-the-clock")
        person.type(ANSWER)
        _submit(person, eval_run)
    finally:
        eval_run.kill()
        eval_run.wait()  # reaped: a zombie's session would look alive to the next attach
    sample = only_sample(tmp_path / "logs")
    assert normalized_of(sample.scores["rebench_scorer"]) == pytest.approx(1.0, abs=1e-3)
    summary = sample.store[SUMMARY_KEY]
    [pause] = summary["pauses"]
    assert pause["resumed"] - pause["paused"] >= 2.5
    assert summary["working_seconds"] <= summary["clock_seconds"] - 2.5
    assert summary["ended_by"] == "submitted"
    assert run_flags(sample) == []  # an honest pause flags nothing
    assert "worked > /tmp/off-the-clock" in sample.store[RECORDING_KEY]  # what was typed


def test_a_command_hidden_by_the_shell_and_the_screen_is_in_the_log_and_flagged(
    tmp_path: Path,
) -> None:
    """Attack: clear the prompt hooks (PS0/PROMPT_COMMAND), run a command, then print
    2.4 MB so the recording's kept tail loses it. Now the hooks cannot be changed in the
    session's shell, a new shell without them is seen (its lines go unreported), the
    command is a `bash` call from what was typed, typed bytes are all kept, and the lost
    output flags the run. Before: the command was nowhere in the .eval, no flag."""
    eval_run = _eval(tmp_path / "logs")
    try:
        person = Typist("attach", "--wait", "240", str(tmp_path / "logs"))
        person.read_until("[task] ", timeout=240)
        assert "readonly" in person.type("PS0=; PROMPT_COMMAND=; unset PROMPT_COMMAND")
        person.type("""exec env PS1='[task] \\w\\$ ' bash --norc -i""")  # a shell without hooks
        person.type("echo hidden-4321 > /tmp/hidden")
        person.type(ANSWER)
        person.type("true; true")
        person.type("head -c 2400000 /dev/zero | tr '\\0' x; echo", timeout=300)
        _submit(person, eval_run)
    finally:
        eval_run.kill()
        eval_run.wait()  # reaped: a zombie's session would look alive to the next attach
    sample = only_sample(tmp_path / "logs")
    commands = [command for command, _ in bash_calls(sample)]
    assert "echo hidden-4321 > /tmp/hidden" in commands, commands
    assert ANSWER in commands
    summary = sample.store[SUMMARY_KEY]
    assert summary["recording_truncated"] is True
    assert "hidden-4321" in sample.store[RECORDING_KEY]  # the typed bytes survive the cut
    flags = run_flags(sample)
    assert any("recording lost output" in f for f in flags), flags
    assert any("prompt hooks" in f for f in flags), flags
    assert any("shell was replaced (exec) by `bash --norc -i`" in f for f in flags), flags
    assert normalized_of(sample.scores["rebench_scorer"]) == pytest.approx(1.0, abs=1e-3)


FORGE = (
    "printf '\\033]777;labcoat;start\\007'; printf '\\033]777;labcoat;end;0;%s;%s\\007' "
    '"$(printf / | base64 -w0)" "$(printf \'python train.py --%s\' honest | base64 -w0)"'
)
IMPOSTOR = (
    "python3 -c 'import socket,json,base64; s=socket.socket(socket.AF_UNIX); "
    's.connect("/tmp/.labcoat-human/control.sock"); s.settimeout(5); '
    'c="python train.py --"+"impostor"; d=base64.b64encode(c.encode()+b"\\r").decode(); '
    's.sendall(b"".join(json.dumps(m).encode()+b"\\n" for m in [{"op":"hello"}, '
    '{"op":"command","command":c,"output":"","started":1,"ended":2}, '
    '{"op":"input","data":d,"to":"shell"}])); print(s.recv(999))\''
)


def test_forged_markers_and_an_impostor_terminal_make_no_command_and_flag(
    tmp_path: Path,
) -> None:
    """Attack: print the terminal server's in-band end-of-command marker (a `bash` call
    that never ran appeared in the log), and connect to the control socket as a second
    terminal server to type into the record. Now commands come only from what the one
    terminal server saw typed: neither forgery is a command, and both flag the run."""
    eval_run = _eval(tmp_path / "logs")
    try:
        person = Typist("attach", "--wait", "240", str(tmp_path / "logs"))
        person.read_until("[task] ", timeout=240)
        person.type(FORGE)
        assert "refused" in person.type(IMPOSTOR)
        person.type(ANSWER)
        _submit(person, eval_run)
    finally:
        eval_run.kill()
        eval_run.wait()  # reaped: a zombie's session would look alive to the next attach
    sample = only_sample(tmp_path / "logs")
    commands = [command for command, _ in bash_calls(sample)]
    forged = {"python train.py --honest", "python train.py --impostor"}
    assert not forged & set(commands), commands
    assert ANSWER in commands and FORGE in commands
    flags = run_flags(sample)
    assert any("end-of-command markers" in f for f in flags), flags
    assert any("second connection" in f for f in flags), flags
    assert normalized_of(sample.scores["rebench_scorer"]) == pytest.approx(1.0, abs=1e-3)

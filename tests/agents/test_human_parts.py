"""The parts of `--agent human` that need no sandbox: the working clock, the choice of
session to attach to, and the CLI's refusals."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from labcoat._errors import LabcoatError
from labcoat.agents.human._attach import pick
from labcoat.agents.human._clock import WorkingClock
from labcoat.agents.human._commands import CommandLog
from labcoat.agents.human._sessions import LiveSession, live_sessions, register
from tests.cli_runner import run_cli_captured


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_working_time_leaves_out_pauses_and_the_budget_counts_only_work() -> None:
    time = FakeTime()
    clock = WorkingClock(budget_seconds=100, now=time)
    assert clock.working_seconds() == 0 and not clock.over_budget()
    clock.start()
    time.now += 30
    assert clock.stop() and not clock.stop()  # a second stop changes nothing
    time.now += 500  # a long pause
    assert clock.start() and not clock.start()
    time.now += 60
    assert clock.working_seconds() == 90 and clock.clock_seconds() == 590
    assert clock.left() == 10 and not clock.over_budget()
    time.now += 10
    assert clock.over_budget()
    clock.stop(final=True)  # the session's end is not a pause
    assert clock.record()["pauses"] == [{"paused": 1030.0, "resumed": 1530.0}]
    assert "working time 0:01:40 of 0:01:40" in clock.status()


def session(id: str, terminal: Path, pid: int, log_dir: str = "", run_id: str = "") -> LiveSession:
    return LiveSession(
        id, "t/main", "t/main", 1, str(terminal), pid, "", 0.0, log_dir=log_dir, run_id=run_id
    )


def test_attach_picks_the_one_waiting_session_and_names_the_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    socket = tmp_path / "term.sock"
    socket.touch()
    assert live_sessions() == []
    here = os.path.realpath(tmp_path)
    register(session("abc123", socket, os.getpid(), log_dir=f"{here}/logs/eval-mini"))
    register(session("dead00", socket, 2**22 + 7))  # its eval is gone: swept
    assert [s.id for s in live_sessions()] == ["abc123"]
    # bare: the session of an eval whose log folder is here, never the only one waiting
    assert pick(live_sessions(), None, here=here).id == "abc123"
    with pytest.raises(LabcoatError, match=r"no waiting session is of an eval .* \(1 waiting"):
        pick(live_sessions(), None, here=str(tmp_path / "cache"))
    assert pick(live_sessions(), "abc").id == "abc123"
    with pytest.raises(LabcoatError, match="no waiting session belongs to 'zzz'"):
        pick(live_sessions(), "zzz")
    register(session("def456", socket, os.getpid(), log_dir=f"{here}/logs/other"))
    with pytest.raises(LabcoatError, match="2 sessions are waiting here: name one"):
        pick(live_sessions(), None, here=here)


def test_a_session_is_found_through_its_own_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two evals' sessions side by side: each eval's log folder (as given, relative, or a
    folder above it) or run id names its own session and never the other's."""
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    socket = tmp_path / "term.sock"
    socket.touch()
    (tmp_path / "logs/a").mkdir(parents=True)
    (tmp_path / "logs/ab").mkdir(parents=True)
    a, ab = (os.path.realpath(tmp_path / name) for name in ("logs/a", "logs/ab"))
    register(session("aaa111", socket, os.getpid(), log_dir=a, run_id="runA"))
    register(session("bbb222", socket, os.getpid(), log_dir=ab, run_id="runB"))
    sessions = live_sessions()
    assert pick(sessions, a).id == "aaa111"
    assert pick(sessions, "logs/a").id == "aaa111"  # not logs/ab, whose name starts so
    assert pick(sessions, "logs/ab/").id == "bbb222"
    assert pick(sessions, "runB").id == "bbb222"
    with pytest.raises(LabcoatError, match="2 sessions belong to 'logs'"):
        pick(sessions, "logs")
    with pytest.raises(LabcoatError, match="no waiting session belongs to 'logs/c'"):
        pick(sessions, "logs/c")


def test_bare_attach_with_two_waiting_lists_them_and_refuses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    socket = tmp_path / "term.sock"
    socket.touch()
    register(session("aaa111", socket, os.getpid(), log_dir="/logs/one"))
    register(session("bbb222", socket, os.getpid(), log_dir="/logs/two"))
    code, _, err = run_cli_captured(capsys, "attach")  # neither is of an eval here
    assert code == 2, err
    listed, hint = err.strip().splitlines()[:2], err.strip().splitlines()[-1]
    assert "aaa111" in listed[0] and "/logs/one" in listed[0], err
    assert "bbb222" in listed[1] and "/logs/two" in listed[1], err
    assert "2 waiting elsewhere" in hint and "labcoat attach LOGDIR" in hint, err
    assert "Traceback" not in err


def test_the_cli_refuses_what_cannot_host_a_person(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    code, _, err = run_cli_captured(capsys, "attach")
    assert code == 2 and "no session is waiting for a person" in err
    assert "Traceback" not in err
    for extra in (["--sandbox", "local"], ["--ray", "local"]):
        code, _, err = run_cli_captured(
            capsys, "eval", "mini", "--agent", "human", "--task", "scaling_law/main", *extra
        )
        assert code == 2 and "--agent human runs on this machine" in err, err


def _end(status: int, line: str) -> bytes:
    b64 = base64.b64encode
    return b"\x1b]777;labcoat;end;%d;%s;%s\x07" % (status, b64(b"/w"), b64(line.encode()))


def _log() -> tuple[CommandLog, list[dict]]:
    found: list[dict] = []
    log = CommandLog(found.append)
    log.shell_started()
    log.shown(_end(0, "") + b"[task] /w$ ")
    return log, found


def test_a_command_is_the_line_typed_and_its_output_what_followed() -> None:
    log, found = _log()
    log.typed(b"ech", "shell", 1.0)
    log.typed(b"o hx\x7fi\x1b[D\x1b[C \r", "shell", 2.0)  # a typo, backspace, arrows
    log.shown(b"echo hi \r\n\x1b]777;labcoat;start\x07hi\r\n" + _end(0, "echo hi"))
    log.shown(b"[task] /w$ ")
    log.typed(b"cat > f <<END\rone\rEND\r", "shell", 3.0)  # a paste: one command a line
    log.typed(b"task submit\r", "shell", 4.0)
    log.typed(b"y\r", "task", 5.0)  # to the program in the foreground, not a command
    log.finish()
    assert [c["command"] for c in found] == [
        "echo hi ",
        "cat > f <<END",
        "one",
        "END",
        "task submit",
    ]
    assert found[0]["output"] == "hi" and found[0]["exit"] == 0
    assert found[0]["shell_line"] == "echo hi"
    assert log.flags == []


def test_printed_markers_make_no_command_and_flag_the_run() -> None:
    """The in-band end marker, printed by a command: not a record (it was, before)."""
    log, found = _log()
    log.typed(b"printf forged\r", "shell", 1.0)
    log.shown(b"\r\n" + _end(0, "python honest_run.py") + _end(0, "printf forged"))
    log.shown(b"[task] /w$ ")
    log.finish()
    assert [c["command"] for c in found] == ["printf forged"]
    assert found[0]["shell_line"] == "printf forged"  # the shell's own, last, report
    assert any("markers" in f for f in log.flags), log.flags


def test_lines_the_shell_never_reports_flag_its_hooks() -> None:
    log, found = _log()
    for n in range(5):
        log.typed(b"echo %d\r" % n, "shell", float(n))
        log.shown(b"\r\n%d\r\nbash$ " % n)  # no markers: PS0/PROMPT_COMMAND are gone
    log.finish()
    assert [c["command"] for c in found] == [f"echo {n}" for n in range(5)]
    assert any("prompt hooks" in f for f in log.flags), log.flags

"""The parts of `--agent human` that need no sandbox: the working clock, the choice of
session to attach to, and the CLI's refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labcoat._errors import LabcoatError
from labcoat.agents.human._attach import pick
from labcoat.agents.human._clock import WorkingClock
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


def session(id: str, terminal: Path, pid: int) -> LiveSession:
    return LiveSession(id, "t/main", "t/main", 1, str(terminal), pid, "", 0.0)


def test_attach_picks_the_one_waiting_session_and_names_the_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    socket = tmp_path / "term.sock"
    socket.touch()
    assert live_sessions() == []
    register(session("abc123", socket, os.getpid()))
    register(session("dead00", socket, 2**22 + 7))  # its eval is gone: swept
    assert [s.id for s in live_sessions()] == ["abc123"]
    assert pick(live_sessions(), None).id == "abc123"
    assert pick(live_sessions(), "abc").id == "abc123"
    with pytest.raises(LabcoatError, match="no waiting session 'zzz'"):
        pick(live_sessions(), "zzz")
    register(session("def456", socket, os.getpid()))
    with pytest.raises(LabcoatError, match="several sessions are waiting: abc123"):
        pick(live_sessions(), None)


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

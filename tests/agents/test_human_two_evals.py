"""Two `--agent human` evals on one machine at once (issue 45, item 5): each person's
`labcoat attach` reaches the session of their own eval, named by its log folder or by the
id the eval printed, and a bare `labcoat attach` with two waiting refuses, listing them.
Before: attach took "the one waiting session", another eval's included, so one test's
typist typed into another test's session."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.agents.test_human_agent import bash_calls, only_sample
from tests.human_typist import LABCOAT, Typist

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bwrap sandboxes are Linux's")
READY = re.compile(r"is ready for a person: labcoat attach (\w+)")


def _eval(log_dir: Path, output: Path) -> subprocess.Popen[bytes]:
    command = [LABCOAT, "eval", "mini", "--agent", "human", "--task", "scaling_law/main"]
    with output.open("wb") as sink:  # a file: read while the eval runs, no pipe to fill
        return subprocess.Popen(
            [*command, "--log-dir", str(log_dir)],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def _printed_id(output: Path, eval_run: subprocess.Popen[bytes], timeout: float = 600) -> str:
    """The session id in the eval's own `labcoat attach ID` line."""
    deadline = time.monotonic() + timeout
    while not (found := READY.search(output.read_text(errors="replace"))):
        assert eval_run.poll() is None, output.read_text(errors="replace")
        assert time.monotonic() < deadline, output.read_text(errors="replace")
        time.sleep(0.5)
    return found.group(1)


def _work(person: Typist, marker: str) -> None:
    person.read_until("[task] ", timeout=60)
    person.type(f"echo {marker}")
    person.type("task submit", wait_for="[y/N]")
    person.type("y", wait_for="the session is over")
    person.wait(60)


def test_two_evals_at_once_each_attach_reaches_its_own(tmp_path: Path) -> None:
    logs = {name: tmp_path / name / "logs" for name in ("one", "two")}
    outputs = {name: tmp_path / f"{name}.out" for name in logs}
    runs = {name: _eval(logs[name], outputs[name]) for name in logs}
    try:
        ids = {name: _printed_id(outputs[name], runs[name]) for name in logs}
        # both wait, neither of an eval here: a bare attach lists them and refuses
        bare = subprocess.run([LABCOAT, "attach"], capture_output=True, text=True, timeout=60)
        assert bare.returncode != 0, bare.stderr
        lines = bare.stderr.strip().splitlines()
        for name in logs:
            folder = os.path.realpath(logs[name])
            assert any(ids[name] in line and folder in line for line in lines), lines
        # at least these two: another test's eval may be waiting beside them at this moment
        waiting = re.search(r"\((\d+) waiting elsewhere\)", lines[-1])
        assert waiting is not None and int(waiting.group(1)) >= 2, lines[-1]
        assert "labcoat attach LOGDIR" in lines[-1]
        assert "Traceback" not in bare.stderr

        _work(Typist("attach", str(logs["one"])), "marker-of-one")  # by its log folder
        _work(Typist("attach", ids["two"]), "marker-of-two")  # by the id its eval printed
        for name, run in runs.items():
            assert run.wait(600) == 0, outputs[name].read_text(errors="replace")
    finally:
        for run in runs.values():
            run.kill()
            run.wait()
    for name, other in (("one", "two"), ("two", "one")):
        commands = [command for command, _ in bash_calls(only_sample(logs[name]))]
        assert f"echo marker-of-{name}" in commands, commands
        assert f"echo marker-of-{other}" not in commands, commands

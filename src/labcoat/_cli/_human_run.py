"""`labcoat eval ... --agent human` at a terminal: the eval goes to the background (its
own session, so a dropped connection does not end it) and this terminal attaches to each
sample as it becomes ready; `labcoat attach` returns to one after a detach."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from labcoat.agents.human._attach import attach, write_line
from labcoat.agents.human._sessions import RUN_TOKEN_ENV, live_sessions

POLL_SECONDS = 0.5
OUTPUT_NAME = "human-eval.out"


def wants_foreground(agent: str) -> bool:
    """A person at a terminal ran the eval (not its background copy, not a script)."""
    return agent == "human" and RUN_TOKEN_ENV not in os.environ and sys.stdin.isatty()


def run_for_person(argv: list[str], log_dir: str) -> int:
    """Start the eval in the background and attach here; the eval's exit code."""
    token = uuid.uuid4().hex
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    output = Path(log_dir) / OUTPUT_NAME
    with output.open("ab") as sink:
        eval_process = subprocess.Popen(
            [sys.executable, "-m", "labcoat", *argv],
            env={**os.environ, RUN_TOKEN_ENV: token},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    write_line(
        f"labcoat: the eval runs in the background (pid {eval_process.pid}, output in "
        f"{output}); closing this terminal does not stop it: `labcoat attach "
        f"{os.path.realpath(log_dir)}` returns to it"
    )
    seen: set[str] = set()
    while eval_process.poll() is None:
        waiting = [s for s in live_sessions(token) if s.id not in seen]
        if not waiting:
            time.sleep(POLL_SECONDS)
            continue
        session = waiting[0]
        why = attach(session)
        write_line(f"labcoat: {why}")
        if why == "detached":
            write_line(f"labcoat: `labcoat attach {session.id}` returns to it")
            return 0
        seen.add(session.id)
    write_line(_tail(output))
    return eval_process.returncode


def _tail(path: Path, lines: int = 30) -> str:
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])

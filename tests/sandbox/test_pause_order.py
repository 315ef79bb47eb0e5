"""A paused sandbox's parents never see their children stop.

A timed score stops every command of the sample (`SessionProcesses.paused`). When a
person's shell saw its foreground command (`task score`) stop while the shell itself
still ran, it took the terminal back and printed `[2]+ Stopped task score`; after SIGCONT
the command ran on in the background and its output never reached the prompt (CI,
2026-12-03: `test_human_agent.py::test_one_command_at_a_terminal_gives_the_oracles_score`).
Stopping parents before children, and continuing children before parents, leaves a
waiting parent nothing to see. Played here on a host process tree: a parent in
`waitpid(WUNTRACED)` on its child, as a shell waits on its foreground job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from labcoat.sandbox._session_process import _continue_in_order, _generations, _stop_in_order

# the parent forks a sleeping child, prints its pid, and reports what its wait saw
PARENT = """
import os, sys
child = os.fork()
if child == 0:
    import time
    time.sleep(30)
    os._exit(0)
print(child, flush=True)
sys.stdin.readline()  # told to wait now
_, status = os.waitpid(child, os.WUNTRACED)
print("stopped" if os.WIFSTOPPED(status) else "exited", flush=True)
if os.WIFSTOPPED(status):
    os.kill(child, 9)
    os.waitpid(child, 0)
"""

ROUNDS = 60  # before the fix 5 of 100 rounds saw the stop: 60 all pass by chance 5% of runs


def _one_round() -> str:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdin is not None and parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.stdin.write("\n")
    parent.stdin.flush()
    time.sleep(0.05)  # the parent is in its wait
    tree = {parent.pid, child}
    assert _generations(tree) == [{parent.pid}, {child}]
    _stop_in_order(tree)
    _continue_in_order(tree)
    with contextlib.suppress(ProcessLookupError):  # a parent that saw the stop reaped it
        os.kill(child, signal.SIGKILL)
    seen = parent.stdout.readline().strip()
    parent.wait(10)
    return seen


def test_a_waiting_parent_never_sees_its_child_stop() -> None:
    seen = [_one_round() for _ in range(ROUNDS)]
    assert seen == ["exited"] * ROUNDS, seen


def test_generations_follow_the_tree_within_the_set() -> None:
    """Depth counts only parents inside the set; a pid that is gone is a root."""
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE)
    assert shell.stdout is not None
    sleeper = int(shell.stdout.readline())
    try:
        assert _generations({shell.pid, sleeper}) == [{shell.pid}, {sleeper}]
        assert _generations({sleeper}) == [{sleeper}]
        gone = 2**22 + 7  # above any pid_max: no such process
        assert _generations({sleeper, gone}) == [{sleeper, gone}]
    finally:
        os.kill(sleeper, signal.SIGKILL)
        shell.kill()
        shell.wait()

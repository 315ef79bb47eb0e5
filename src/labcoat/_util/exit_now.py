"""Ending the process at a second Ctrl-C, from a signal handler."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

EXIT_SIGINT = 130


def exit_now(code: int = EXIT_SIGINT) -> None:
    """End the process, whatever is still running, saying so. Called from a signal
    handler, which may have cut into a write to stdout or stderr: the line goes straight
    to the file descriptor."""
    with contextlib.suppress(Exception):  # a flush cut into ("reentrant call")
        sys.stdout.flush()
    os.write(
        2,
        b"\nlabcoat: interrupted again: exiting now, without waiting for the cleanup "
        b"(sandboxes still being torn down are removed at the next run)\n",
    )
    os._exit(code)


def exit_at_another_interrupt(code: int = EXIT_SIGINT) -> None:
    """Interrupted, and on the way out: another Ctrl-C ends the process with `code`, saying
    so, wherever it lands (Python's own handler would raise KeyboardInterrupt into the
    exit, or die of it). Only the main thread can set a handler; elsewhere, nothing."""
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, lambda signum, frame: exit_now(code))

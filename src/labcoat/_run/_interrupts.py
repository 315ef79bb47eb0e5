"""Ctrl-C during an eval set: a quiet, truthful stop, and a second Ctrl-C that always ends it.

Inspect runs an eval on asyncio (or trio), whose runner owns SIGINT while the run lasts:
the first Ctrl-C cancels the run (samples cancelled, sandboxes torn down, logs marked
cancelled) and the eval returns. Around that, Inspect says things that aren't so: an
interrupted `eval()` gives `eval_set()` no logs, which it reports as "Completed all tasks
... successfully"; samples still tearing down log "Transcript subscriber failed" with a
long traceback; and a second Ctrl-C raises `KeyboardInterrupt` into whatever runs then,
which cleanup code may swallow, so the process may not end.

While labcoat runs an eval set (`guarded`), a hook wraps the runner's SIGINT handler at
the start of each run: the first Ctrl-C is noted and passed on (Inspect cancels as
before); from then on Inspect's console and its subscriber warnings are silenced, and
labcoat says itself that the run was interrupted; a second Ctrl-C ends the process at
once with exit code 130.

At a real terminal Inspect's full-screen display reads the keyboard raw: Ctrl-C there is
a key, not a signal, and the display cancels the run itself. The same hook sees that run
end cancelled and silences the console as for SIGINT, before the display prints its
summary, whose `inspect eval-retry` hint would bypass labcoat's own resume (the same
command again).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from inspect_ai.hooks import Hooks, RunEnd, RunStart, hooks

from labcoat._util.exit_now import exit_at_another_interrupt, exit_now

SUBSCRIBER_FAILED = "Transcript subscriber failed"
TRANSCRIPT_LOGGER = "inspect_ai.log._transcript"

Handler = Callable[[int, FrameType | None], Any]


class _State:
    def __init__(self) -> None:
        self.registered = False
        self.active = False
        """An eval set is running under `guarded`."""
        self.interrupts = 0
        self.cancelled = False
        """A run ended cancelled (the full-screen display's Ctrl-C key)."""
        self.wrapped: dict[int, Handler] = {}
        """id(wrapper) -> the runner's handler it wraps."""


_state = _State()


def interrupted() -> bool:
    """Whether Ctrl-C (or SIGTERM, passed on as Ctrl-C) reached the guarded run, as a
    signal or as the full-screen display's key."""
    return _state.interrupts > 0 or _state.cancelled


def note_interrupt() -> None:
    """Count an interrupt: the first silences Inspect's console, the second exits."""
    _state.interrupts += 1
    if _state.interrupts > 1:
        exit_now()
    _quiet_console(True)


def _wrap(handler: Handler) -> Handler:
    def on_interrupt(signum: int, frame: FrameType | None) -> Any:
        note_interrupt()
        return handler(signum, frame)

    _state.wrapped[id(on_interrupt)] = handler
    return on_interrupt


def _quiet_console(quiet: bool) -> None:
    import rich

    rich.get_console().quiet = quiet


class _SubscriberNoise(logging.Filter):
    """Drop Inspect's subscriber-failure warnings of samples torn down by an interrupt."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (interrupted() and record.getMessage() == SUBSCRIBER_FAILED)


_noise = _SubscriberNoise()


class _CancelledServerNoise(logging.Filter):
    """Drop the traceback of Inspect's control server (uvicorn), whose lifespan is
    cancelled with an interrupted run: a cancellation, not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "CancelledError" not in record.getMessage()


SERVER_LOGGER = "uvicorn.error"
_server_noise = _CancelledServerNoise()


class InterruptHooks(Hooks):
    """Wraps the event loop's SIGINT handler for the length of each guarded run."""

    def enabled(self) -> bool:
        return _state.active

    async def on_run_start(self, data: RunStart) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGINT)
        if callable(current) and id(current) not in _state.wrapped:
            signal.signal(signal.SIGINT, _wrap(current))

    async def on_run_end(self, data: RunEnd) -> None:
        _unwrap()
        if isinstance(data.exception, asyncio.CancelledError | KeyboardInterrupt):
            _state.cancelled = True  # not counted as a Ctrl-C: a second one still may come
            _quiet_console(True)


def _unwrap() -> None:
    """Give the runner its own handler back (so it restores the default when it ends)."""
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGINT)
    original = _state.wrapped.pop(id(current), None) if callable(current) else None
    if original is not None:
        signal.signal(signal.SIGINT, original)


def _register() -> None:
    """Register the hook once, after Inspect has loaded (and announced) the user's hooks.

    Inspect prints the hooks it finds when it first starts an eval in a process; ours
    is labcoat's plumbing, not the user's, so it is registered after that.
    """
    if _state.registered:
        return
    from inspect_ai._util.platform import platform_init

    platform_init()  # loads and announces registered hooks, once a process
    hooks(name="labcoat_interrupts", description="Ctrl-C during a labcoat run")(InterruptHooks)
    _state.registered = True


@contextmanager
def guarded() -> Iterator[None]:
    """Run an eval set with the interrupt handling above."""
    import rich

    _register()
    quiet_before = rich.get_console().quiet  # a caller's quiet_console() outlasts the run
    _state.active = True
    _state.interrupts = 0
    _state.cancelled = False
    logging.getLogger(TRANSCRIPT_LOGGER).addFilter(_noise)
    logging.getLogger(SERVER_LOGGER).addFilter(_server_noise)
    try:
        yield
    finally:
        _unwrap()
        if interrupted():  # the process is on its way out (only the CLI runs this)
            exit_at_another_interrupt()
        _state.active = False
        logging.getLogger(TRANSCRIPT_LOGGER).removeFilter(_noise)
        logging.getLogger(SERVER_LOGGER).removeFilter(_server_noise)
        _quiet_console(quiet_before)

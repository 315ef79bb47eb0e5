"""A node's samples run through Inspect's `eval_async` on one event loop per worker process.

Inspect's `eval()` makes a fresh event loop per call and closes it after, which costs a
sample run on its own (one sample per call, as a Ray job is) about 0.3 s: the loop's
start and close, and everything a family keeps warm between samples (ResearchCodeBench's
grading sandbox per paper) started again. The worker process keeps one loop running in
a thread instead, and each sample's eval runs on it: the loop, and what lives on it,
outlive the sample. Inspect allows one `eval_async` at a time per process, and a Ray
worker runs one job at a time, so they never overlap.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from inspect_ai import Task, eval_async
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

CANCEL_GRACE_S = 60.0
"""How long an interrupted sample may take to tear its sandboxes down."""

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def _inspect_internals() -> tuple[Callable[..., Any], ...] | None:
    """Inspect's own set-up steps of `eval()` (private: where they moved, fall back)."""
    try:
        from inspect_ai._eval.eval import init_eval_display
        from inspect_ai._util.asyncfiles import AsyncFilesystem
        from inspect_ai._util.platform import platform_init
    except ImportError:
        return None
    return platform_init, init_eval_display, AsyncFilesystem


def _running_loop(platform_init: Callable[[], None]) -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed() or not _loop.is_running():
            platform_init()
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="labcoat-eval-loop", daemon=True
            )
            thread.start()
            _loop = loop
        return _loop


def run_eval(task: Task, **options: Any) -> list[EvalLog]:
    """`inspect_ai.eval(task, display="none", **options)`, on the process's long-lived loop."""
    internals = _inspect_internals()
    if internals is None:
        return inspect_eval(task, display="none", **options)
    platform_init, init_eval_display, async_filesystem = internals
    init_eval_display("none", None, None, None)
    ended = threading.Event()

    async def main() -> list[EvalLog]:
        try:
            async with async_filesystem():
                return await eval_async(task, **options)
        finally:
            ended.set()

    future = asyncio.run_coroutine_threadsafe(main(), _running_loop(platform_init))
    try:
        return future.result()
    except BaseException:
        # interrupted here (Ray cancelled the job): cancel the eval on its loop and let it
        # tear its sandboxes down before the interrupt goes on
        future.cancel()
        with contextlib.suppress(BaseException):
            ended.wait(CANCEL_GRACE_S)
        raise

"""Calling async code from sync entry points (Inspect @task functions, the CLI)."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import anyio

T = TypeVar("T")


def run_sync(fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """Run `fn(*args)` to completion on a fresh event loop in a worker thread.

    A worker thread keeps this safe to call whether or not an event loop is running in
    the caller's thread (Inspect builds tasks from inside its own loop). The thread runs
    in a copy of the caller's context: context variables (the run's choices,
    `labcoat._util.run_choices`) reach `fn` as they would on the caller's thread.
    """
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, anyio.run, fn, *args).result()

"""Calling async code from sync entry points (Inspect @task functions, the CLI)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import anyio

T = TypeVar("T")


def run_sync(fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """Run `fn(*args)` to completion on a fresh event loop in a worker thread.

    A worker thread keeps this safe to call whether or not an event loop is running in
    the caller's thread (Inspect builds tasks from inside its own loop).
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, fn, *args).result()

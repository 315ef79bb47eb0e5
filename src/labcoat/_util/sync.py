"""Calling async code from sync entry points (Inspect @task functions, the CLI)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import anyio

from labcoat._util.run_choices import current_choices, using

T = TypeVar("T")


def run_sync(fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """Run `fn(*args)` to completion on a fresh event loop in a worker thread.

    A worker thread keeps this safe to call whether or not an event loop is running in
    the caller's thread (Inspect builds tasks from inside its own loop). The run's
    choices (`labcoat._util.run_choices`) go with it; the caller's whole context does
    not, since it also says which event loop runs there (sniffio's variable), and the
    fresh loop would then refuse to start.
    """
    choices = current_choices()

    def with_choices() -> T:
        with using(choices):
            return anyio.run(fn, *args)

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(with_choices).result()

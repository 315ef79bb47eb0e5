"""Scoring that fits the time Inspect gives it.

Inspect scores a sample with a time limit of its own, half the sample's `time_limit`;
scoring that runs past it ends the sample as an error, and an error must never be where
a hung grader leads (an agent could hang its own scoring to escape a bad score). So a
scorer opens `scoring_deadline()` (or is decorated `@bounded_by_scoring_time`), and the
operations it runs take `within_scoring_time(timeout)`:
a grader that would outlive the allowance times out inside the scorer, early enough for
the scorer to record the floor score and a flag.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from inspect_ai.util import sample_limits

P = ParamSpec("P")
T = TypeVar("T")

_deadline: ContextVar[float | None] = ContextVar("labcoat_scoring_deadline", default=None)

SCORING_SHARE = 0.5
"""Inspect's scoring time limit, as a share of the sample's time limit."""
RECORD_MARGIN = 0.2
"""Of that allowance, the share kept for stopping a grader and recording the outcome
(at most `RECORD_MARGIN_MAX_S`)."""
RECORD_MARGIN_MAX_S = 60.0
MIN_OPERATION_S = 1.0
"""A grader started with less than this left still gets this (and times out)."""


def _allowance() -> float | None:
    """Seconds Inspect allows this sample's scoring; None without a time limit or sample."""
    try:
        limit = sample_limits().time.limit
    except RuntimeError:  # not inside a sample (a direct call, a unit test)
        return None
    return None if limit is None else float(limit) * SCORING_SHARE


@contextlib.contextmanager
def scoring_deadline() -> Iterator[None]:
    """Scoring from here on must end within Inspect's scoring allowance, with a margin."""
    allowance = _allowance()
    if allowance is None:
        yield
        return
    margin = min(RECORD_MARGIN_MAX_S, allowance * RECORD_MARGIN)
    token = _deadline.set(time.monotonic() + allowance - margin)
    try:
        yield
    finally:
        _deadline.reset(token)


def within_scoring_time(timeout: float) -> float:
    """`timeout`, cut to what is left of the scoring time (when one is open)."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    return max(MIN_OPERATION_S, min(timeout, deadline - time.monotonic()))


def scoring_time_left() -> float | None:
    """Seconds left of the scoring time (None: none is open)."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def share_of_scoring_time(timeout: float, share: float) -> float:
    """`timeout`, cut to `share` of what is left of the scoring time (when one is open):
    for a step before the grader, which must leave the grader its time."""
    left = scoring_time_left()
    if left is None:
        return timeout
    return max(MIN_OPERATION_S, min(timeout, left * share))


def bounded_by_scoring_time(score: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """A scorer function that runs inside `scoring_deadline()`."""

    @functools.wraps(score)
    async def bounded(*args: P.args, **kwargs: P.kwargs) -> T:
        with scoring_deadline():
            return await score(*args, **kwargs)

    return bounded

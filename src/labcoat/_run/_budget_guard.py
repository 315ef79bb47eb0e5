"""The run's budget, held inside Inspect: Inspect hooks in the process that runs samples.

- A sample starts only when the bank admits it (`on_sample_init`, before its sandbox is
  made): else it raises `NotStartedError` and runs nothing.
- Spend goes to the bank as it happens: after every model call the sample's usage per
  model (Inspect's own running totals, so nothing a call adds is missed), and every
  `TICK_S` the GPU-seconds of its held GPUs; at its end, the figures of its log.
- When the budget is spent, every running sample that is not being scored ends as at a
  per-sample limit (`BudgetLimitError`: its agent stops, the sample is scored): at once
  when it is between model calls, else as its call returns; and no model call starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.hooks import (
    BeforeModelGenerate,
    Hooks,
    ModelRetry,
    ModelUsageData,
    RunEnd,
    RunStart,
    SampleEnd,
    SampleInit,
    SampleScoring,
    SampleStart,
    hooks,
)

from labcoat._run._budget import BudgetLimitError, NotStartedError, is_not_started
from labcoat._run._budget_bank import Bank
from labcoat._util.store_keys import GPUS_KEY, GRADER_GPUS_KEY

TICK_S = 5.0
"""How often GPU time is counted and the budget checked between model calls."""
WAIT_S = 1.0
"""How often a sample waiting for running samples' reservations asks again."""
SAMPLE_ERROR_LOGGER = "inspect_ai._eval.task.run"


@dataclass
class _Running:
    active: Any
    """Inspect's ActiveSample."""
    attempt: str
    sample: str
    family: str
    state: Any = None
    seen: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Per model: (cost, tokens) already reported."""
    gpu_seen: float = 0.0
    in_call: int = 0
    scoring: bool = False
    stopped: bool = False


class _State:
    def __init__(self) -> None:
        self.bank: Bank | None = None
        self.registered = False
        self.running: dict[str, _Running] = {}
        self.ticker: asyncio.Task[None] | None = None
        self.progress = ""


_state = _State()


def _current() -> Any:
    from inspect_ai.log._samples import sample_active

    return sample_active()


def _entry() -> _Running | None:
    """The running sample this hook is called for (by its uuid, as its log has it)."""
    active = _current()
    return _state.running.get(active.sample_uuid) if active is not None else None


def _family(active: Any) -> str:
    return str(active.task).rsplit("/", 1)[-1]


def _sample_name(active: Any) -> str:
    task_id = str((active.sample.metadata or {}).get("task_id", active.sample.id))
    sample_id = str(active.sample.id)
    name = task_id if sample_id == task_id else f"{task_id}/{sample_id}"
    return f"{_family(active)}/{name}#{active.epoch}"


def _usage_records(entry: _Running, usage: dict[str, Any]) -> list[dict[str, Any]]:
    """What the sample's usage per model adds to what was reported of it."""
    records = []
    for model, figures in usage.items():
        cost_seen, tokens_seen = entry.seen.get(model, (0.0, 0))
        tokens = int(figures.total_tokens or 0) - tokens_seen
        cost = None if figures.total_cost is None else float(figures.total_cost) - cost_seen
        if tokens <= 0 and not cost:
            continue
        entry.seen[model] = (cost_seen + (cost or 0.0), tokens_seen + tokens)
        records.append(
            {
                "sample": entry.sample,
                "attempt": entry.attempt,
                "family": entry.family,
                "model": model,
                "usd": cost,
                "tokens": tokens,
            }
        )
    return records


def _gpu_seconds(store: Any, final: bool) -> float:
    """GPU-seconds a sample's record shows: held so far (live), or as its log has them."""
    get = store.get if hasattr(store, "get") else dict(store or {}).get
    record = get(GPUS_KEY) or {}
    total = 0.0
    if final and isinstance(record.get("gpu_seconds"), int | float):
        total = float(record["gpu_seconds"])
    elif record.get("ids") and isinstance(record.get("acquired_at"), int | float):
        total = len(record["ids"]) * max(0.0, time.time() - record["acquired_at"])
    if final:
        for grader in get(GRADER_GPUS_KEY) or []:
            if isinstance(grader, dict) and isinstance(grader.get("gpu_seconds"), int | float):
                total += float(grader["gpu_seconds"])
    return total


def _gpu_record(entry: _Running, store: Any, final: bool) -> list[dict[str, Any]]:
    held = _gpu_seconds(store, final) if store is not None else entry.gpu_seen
    delta = held - entry.gpu_seen
    if abs(delta) < 1e-3:
        return []
    entry.gpu_seen = held
    return [
        {
            "sample": entry.sample,
            "attempt": entry.attempt,
            "family": entry.family,
            "gpu_seconds": round(delta, 3),
        }
    ]


async def _report(records: list[dict[str, Any]]) -> str | None:
    bank = _state.bank
    if bank is None or not records:
        return None
    reason, _state.progress = await bank.record(records)
    with contextlib.suppress(Exception):  # no task display (Ray nodes, --json)
        from inspect_ai.util import display_counter

        display_counter("budget", _state.progress)
    return reason


def _stop(entry: _Running, reason: str) -> None:
    """End a running sample as a per-sample limit would (not while it is scored)."""
    if entry.scoring or entry.stopped or entry.active.tg is None:
        return
    entry.stopped = True
    entry.active.limit_exceeded(BudgetLimitError(reason))


def _stop_all(reason: str) -> None:
    for entry in list(_state.running.values()):
        if entry.in_call <= 0:
            _stop(entry, reason)


class BudgetHooks(Hooks):
    """Admission, spend and stops of the run's budget (enabled while `guarding`)."""

    def enabled(self) -> bool:
        return _state.bank is not None

    async def on_run_start(self, data: RunStart) -> None:
        if _state.ticker is None or _state.ticker.done():
            with contextlib.suppress(RuntimeError):  # not on asyncio: no ticker
                _state.ticker = asyncio.get_running_loop().create_task(_tick())

    async def on_run_end(self, data: RunEnd) -> None:
        if _state.ticker is not None:
            _state.ticker.cancel()
            _state.ticker = None

    async def on_sample_init(self, data: SampleInit) -> None:
        bank, active = _state.bank, _current()
        if bank is None or active is None:
            return
        need = {
            "usd": float(active.cost_limit or 0.0),
            "tokens": float(active.token_limit or 0.0),
        }
        sample = _sample_name(active)
        while True:
            verdict, why = await bank.admit(data.sample_id, sample, need)
            if verdict == "start":
                break
            if verdict == "refuse":
                raise NotStartedError(why)
            await asyncio.sleep(WAIT_S)
        _state.running[data.sample_id] = _Running(active, data.sample_id, sample, _family(active))

    async def on_sample_start(self, data: SampleStart) -> None:
        entry = _state.running.get(data.sample_id)
        if entry is not None:
            from inspect_ai.solver._task_state import sample_state

            entry.state = sample_state()

    async def on_before_model_generate(self, data: BeforeModelGenerate) -> None:
        entry = _entry()
        if entry is None or entry.scoring or _state.bank is None:
            return
        reason = await _state.bank.exhausted()
        if reason is not None:
            entry.stopped = True
            raise BudgetLimitError(reason)
        entry.in_call += 1

    async def on_model_retry(self, data: ModelRetry) -> None:
        entry = _entry()
        if entry is not None:
            entry.in_call = max(0, entry.in_call - 1)

    async def on_model_usage(self, data: ModelUsageData) -> None:
        from inspect_ai.model._model import sample_model_usage

        entry = _entry()
        if entry is None:
            return
        entry.in_call = max(0, entry.in_call - 1)
        reason = await _report(_usage_records(entry, sample_model_usage()))
        if reason is not None:
            _stop_all(reason)
            _stop(entry, reason)  # its call has returned

    async def on_sample_scoring(self, data: SampleScoring) -> None:
        entry = _state.running.get(data.sample_id)
        if entry is not None:
            entry.scoring = True

    async def on_sample_end(self, data: SampleEnd) -> None:
        entry = _state.running.pop(data.sample_id, None)
        if entry is None or _state.bank is None:
            return
        sample = data.sample
        records = _usage_records(entry, dict(sample.model_usage or {}))
        records += _gpu_record(entry, sample.store or {}, final=True)
        try:
            reason = await _report(records)
        finally:
            await _state.bank.release(entry.attempt)
        if reason is not None:
            _stop_all(reason)


async def _tick() -> None:
    """GPU time of the running samples, and stops between model calls."""
    while True:
        await asyncio.sleep(TICK_S)
        bank = _state.bank
        if bank is None:
            continue
        with contextlib.suppress(Exception):  # a failed tick: the next one tries again
            records = []
            for entry in list(_state.running.values()):
                store = getattr(entry.state, "store", None)
                if store is not None:
                    records += _gpu_record(entry, store, final=False)
            reason = await _report(records) if records else await bank.exhausted()
            if reason is not None:
                _stop_all(reason)


class _NotStartedNoise(logging.Filter):
    """Inspect warns of every errored sample; one the budget kept from starting is not an
    error of the run (the tables list it as not started)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not is_not_started(record.getMessage())


_noise = _NotStartedNoise()


def _register() -> None:
    """Once a process, after Inspect loaded (and announced) the user's own hooks."""
    if _state.registered:
        return
    from inspect_ai._util.platform import platform_init

    platform_init()
    hooks(name="labcoat_budget", description="labcoat: the run's budget")(BudgetHooks)
    _state.registered = True


@contextlib.contextmanager
def guarding(bank: Bank | None) -> Iterator[None]:
    """Hold the run's budget in the evals run inside (nothing when `bank` is None)."""
    if bank is None:
        yield
        return
    _register()
    _state.bank, _state.running, _state.progress = bank, {}, ""
    logging.getLogger(SAMPLE_ERROR_LOGGER).addFilter(_noise)
    try:
        yield
    finally:
        logging.getLogger(SAMPLE_ERROR_LOGGER).removeFilter(_noise)
        _state.bank, _state.running = None, {}

"""What the sandbox saw, written into the sample's Inspect record as it happens.

The proxy and the disk watcher run in the harness, outside any sample's context, so
their observations are collected here, after each command and before grading: every
request through the proxy (allowed, refused, failed), every time the disk quota was
reached, and the GPUs the sample holds. They go to the sample's store (`labcoat:network`,
`labcoat:disk`, `labcoat:gpus`), which the log keeps, and (network and disk) as info
events to the transcript, where `inspect view` shows them at the point of the run they
happened.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from labcoat._util.store_keys import DISK_KEY, GPUS_KEY, GRADER_GPUS_KEY, NETWORK_KEY

if TYPE_CHECKING:
    from labcoat.sandbox._sample import BwrapSession

MAX_NETWORK_ENTRIES = 2000


def _sample_store() -> Any | None:
    """The current sample's own store (not a sub-agent's), or None outside a sample."""
    from inspect_ai.solver._task_state import sample_state

    state = sample_state()
    return state.store if state is not None else None


def _info(data: dict[str, Any], source: str) -> None:
    from inspect_ai.log import transcript

    with contextlib.suppress(Exception):
        transcript().info(data, source=source)


def record_gpus(session: BwrapSession) -> None:
    """The sample's GPUs into its store (again at the end, with how long it held them)."""
    store = _sample_store()
    record = session.gpu_record()
    if store is not None and record is not None:
        store.set(GPUS_KEY, record)


def record_grader_gpus(session: BwrapSession) -> None:
    """A grader's own GPUs (not its sample's), when it gives them back, into the sample's
    store: they cost GPU time too, and they are the machine's to share. A grader step run
    away from its sample (its own Ray task) collects them for the sample's side instead."""
    record = session.gpu_record()
    if record is None:
        return
    away = _collected.get()
    if away is not None:
        away.append(record)
    else:
        store_grader_gpus([record])


def store_grader_gpus(records: list[dict[str, Any]]) -> None:
    """GPU records of grader steps into the current sample's store (none outside one)."""
    store = _sample_store()
    if store is not None and records:
        store.set(GRADER_GPUS_KEY, [*store.get(GRADER_GPUS_KEY, []), *records])


_collected: ContextVar[list[dict[str, Any]] | None] = ContextVar(
    "labcoat_grader_gpus_away", default=None
)


@contextlib.contextmanager
def grader_gpus_collected() -> Iterator[list[dict[str, Any]]]:
    """In a grader step that runs as its own Ray task (no sample there): the GPU records
    its sandboxes leave, for the sample's side to store (`store_grader_gpus`)."""
    records: list[dict[str, Any]] = []
    token = _collected.set(records)
    try:
        yield records
    finally:
        _collected.reset(token)


def record_sandbox_events(session: BwrapSession) -> None:
    """Move what the proxy and the disk quota saw since the last call into the record."""
    store = _sample_store()
    if store is None:
        return
    if store.get(GPUS_KEY) is None:
        record_gpus(session)
    new = session.network_log(start=session.network_seen)
    if new:
        session.network_seen += len(new)
        kept: list[dict[str, Any]] = store.get(NETWORK_KEY, [])
        room = MAX_NETWORK_ENTRIES - len(kept)
        store.set(NETWORK_KEY, kept + new[: max(0, room)])
        refused = [e for e in new if e.get("outcome") == "refused"]
        _info({"network": new, "refused": len(refused)}, source="labcoat.network")
    disk = session.disk
    if disk is None or disk.limit_bytes is None:
        return
    full = disk.full()
    events = disk.exceeded[session.disk_reported :]
    record = store.get(DISK_KEY) or {
        "mechanism": disk.mechanism,
        "limit_bytes": disk.limit_bytes,
        "exceeded": [],
        "full": False,
    }
    if events or (full and not record["full"]):
        session.disk_reported += len(events)
        record = {**record, "exceeded": record["exceeded"] + events, "full": record["full"] or full}
        _info(
            {"disk_quota": {"limit_bytes": disk.limit_bytes, "stops": events, "full": full}},
            source="labcoat.disk",
        )
    store.set(DISK_KEY, record)

"""Grader steps that need what their sample's Ray task does not hold, as Ray tasks of their own.

Under `labcoat eval --ray` every sample is a Ray task holding its declared CPUs, memory and
GPUs. A grader step that needs no more than that (a judge, a test run) runs in place, on
the sample's own reservation. A step that needs GPUs the sample does not hold (PaperBench's
reproduction of a submission an agent wrote on a CPU node) becomes its own Ray task that
asks for those GPUs; Ray puts it on a node that has them. Its CPU and memory stay booked
to the sample, which waits for it: only GPUs are asked for, and a sample that holds GPUs
never waits on another task for them, so waiting samples cannot starve their graders.

Files travel with the task (a tar of the tree) through Ray's object store.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from labcoat._util.tar_extract import extract_all

T = TypeVar("T")
GRADER_RETRIES = 1
"""Further attempts when the grader's node is lost (Ray retries the task elsewhere)."""


@dataclass(frozen=True)
class Reservation:
    """What the running sample's Ray task holds on its node."""

    cpus: float = 0.0
    memory_mb: int = 0
    gpus: float = 0.0


_held: Reservation | None = None


@contextmanager
def sample_reservation(held: Reservation) -> Iterator[None]:
    """While a sample runs as a Ray task (set by the node's runner)."""
    global _held
    previous, _held = _held, held
    try:
        yield
    finally:
        _held = previous


def grader_placement(gpus: float) -> dict[str, Any] | None:
    """Ray options for a grader step that needs `gpus`, or None to run it in place
    (no Ray run, or the sample already holds them)."""
    if _held is None or gpus <= _held.gpus:
        return None
    return {"num_gpus": gpus, "num_cpus": 0}


async def run_placed(fn: Callable[..., T], *args: Any, options: dict[str, Any]) -> T:
    """`fn(*args)` as its own Ray task with `options`; its result (it must pickle)."""
    import ray

    remote = ray.remote(fn).options(
        max_retries=GRADER_RETRIES, retry_exceptions=[OSError, ConnectionError], **options
    )
    return await remote.remote(*args)


def where_am_i() -> str:
    """`host (node id)` of the Ray node running this code."""
    import socket

    import ray

    return f"{socket.gethostname()} ({ray.get_runtime_context().get_node_id()})"


def pack_tree(folder: Path) -> bytes:
    """A folder as an uncompressed tar (modes and symlinks kept)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def unpack_tree(data: bytes, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        extract_all(tar, folder, "tar")

"""What runs on a node: one sample in one epoch, through Inspect's own `eval_async()`.

The node builds the sample's labcoat task exactly as a local run would, runs Inspect on
it with a sample-id filter, and writes the attempt's `.eval` log into the job's shard
directory of the shared log dir. Before that it leaves an attempt marker there, so a
node lost before Inspect writes anything still leaves the reason for its retry. When an
attempt ends without its log (its node lost, its worker crashed, the launcher
interrupted), the launcher, which sees that end, leaves `<attempt>.end` beside the marker
saying which: an attempt with neither a finished log nor an end record was cut while no
launcher watched it (the launcher was killed).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from inspect_ai import Task
from inspect_ai._util.file import file, filesystem

from labcoat._run._budget_bank import RayBank
from labcoat._run._budget_guard import guarding
from labcoat._run._costs import register_prices
from labcoat._run._ray._eval_loop import run_eval
from labcoat._run._ray._plan import SampleJob, family_task
from labcoat._run._ray._priority import run_at_node_priority
from labcoat._run._ray._slots import cluster_slots, register_hook
from labcoat._run._ray._spec import RunSpec
from labcoat._util.run_choices import using
from labcoat.grading import Reservation, sample_reservation

ATTEMPT_SUFFIX = ".attempt"
END_SUFFIX = ".end"
RAY_METADATA = "labcoat_ray"


@dataclass(frozen=True)
class AttemptOutcome:
    """What the launcher learns when a job's attempt ends (the log has the rest)."""

    key: tuple[str, str, int]
    status: str
    log: str | None
    node_id: str
    host: str
    error: str | None
    seconds: float
    niceness: tuple[int, int] = (0, 0)
    """The worker's niceness while the sample ran, and its raylet's (`_priority`)."""


def node_identity() -> dict[str, str]:
    import ray

    context = ray.get_runtime_context()
    return {
        "node_id": context.get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "host": socket.gethostname(),
        "pid": str(os.getpid()),
        "ray_task_id": context.get_task_id() or "",
    }


def write_marker(shard_dir: str, attempt: dict[str, Any]) -> str:
    """`<shard>/<started>-<id>.attempt`: a JSON record of who started this attempt."""
    filesystem(shard_dir).mkdir(shard_dir, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    location = f"{shard_dir}/{stamp}-{attempt['attempt']}{ATTEMPT_SUFFIX}"
    with file(location, "w") as f:
        f.write(json.dumps(attempt))
    return location


def write_end(shard_dir: str, attempt: str, kind: str, detail: str = "") -> None:
    """`<shard>/<attempt>.end`: why an attempt ended without its log (the launcher's view).

    `kind` is one of `END_REASONS`; written only where the attempt left its marker."""
    fs = filesystem(shard_dir)
    if not fs.exists(shard_dir):
        return
    record = {
        "attempt": attempt,
        "kind": kind,
        "detail": detail[:300],
        "ended": datetime.now(UTC).isoformat(),
    }
    with file(f"{shard_dir}/{attempt}{END_SUFFIX}", "w") as f:
        f.write(json.dumps(record))


END_REASONS = {
    "node_lost": "its node was lost",
    "worker_crashed": "its worker process died while its node stayed up",
    "raised": "the node raised an infrastructure error",
    "launcher_interrupted": "the launcher was interrupted (Ctrl-C or SIGTERM) and ended it",
    "displaced": "the launcher cancelled it as it began, to run a lost sample's retry first",
}
"""What an `.end` record's kind means, as an attempt's retry reason says it."""
LAUNCHER_STOPPED = (
    "the launcher stopped (killed, or its machine lost) while it ran, and Ray ended it"
)
"""An attempt of a launch that never recorded its end: no launcher was there to see it."""


_TASKS: dict[str, Task] = {}
TASK_CACHE_SIZE = 8


def _task_for(spec: RunSpec, job: SampleJob) -> Task:
    """The job's labcoat task, built once per worker process for the samples of one task
    (a worker runs many samples; building costs a discovery of the task's files)."""
    args = (spec.config.task_args or {}).get(job.family, {})
    sandbox = spec.config.sandbox
    key = json.dumps(
        [spec.target, job.family, job.entry_id, job.agent, sandbox, args, spec.config.choices],
        sort_keys=True,
        default=str,
    )
    task = _TASKS.pop(key, None)
    if task is None:
        task = family_task(spec.target, job.family, [job.entry_id], job.agent, sandbox, args)
    _TASKS[key] = task  # most recent last
    while len(_TASKS) > TASK_CACHE_SIZE:
        del _TASKS[next(iter(_TASKS))]
    return task


def run_sample(job: SampleJob, spec: RunSpec, attempt_id: str = "") -> AttemptOutcome:
    """One attempt at one job, on whichever node Ray placed it (the launcher names the
    attempt, so it can record how an attempt it saw end without a log ended)."""
    register_hook()  # first: in place before anything here creates a model
    start = time.monotonic()
    niceness = run_at_node_priority()
    node = node_identity()
    attempt = {
        "attempt": attempt_id or uuid.uuid4().hex[:12],
        "launch": spec.launch,
        "sample_id": str(job.sample_id),
        "epoch": job.epoch,
        "started": datetime.now(UTC).isoformat(),
        "resources": job.resources.describe(),
        "niceness": niceness[0],
        "node_niceness": niceness[1],
        **node,
    }
    write_marker(job.shard_dir, attempt)
    if spec.coordinator is not None:
        spec.coordinator.started.remote(job.key, node["node_id"], node["host"])
    register_prices(spec.prices)
    held = Reservation(job.resources.cpus, job.resources.memory_mb, job.resources.gpus)
    bank = RayBank(spec.coordinator) if spec.keeps_account and spec.coordinator else None
    with (
        # the run's choices, from the launcher's config, not this node's environment
        using(spec.config.choices),
        cluster_slots(spec, node["node_id"]),
        sample_reservation(held),
        guarding(bank),
    ):
        # built knowing what the sample holds: a grader step needing GPUs it lacks is
        # placed elsewhere, not unavailable here
        task = _task_for(spec, job)
        [log] = run_eval(
            task,
            sample_id=[job.sample_id],
            epochs=1,
            log_dir=job.shard_dir,
            log_level="warning",
            ctl_server=False,
            metadata={RAY_METADATA: attempt},
            retry_on_error=0,
            **spec.eval_args(),
        )
    error = log.error.message.strip().splitlines()[0][:500] if log.error else None
    return AttemptOutcome(
        key=job.key,
        status=log.status,
        log=log.location,
        node_id=node["node_id"],
        host=node["host"],
        error=error,
        seconds=time.monotonic() - start,
        niceness=niceness,
    )

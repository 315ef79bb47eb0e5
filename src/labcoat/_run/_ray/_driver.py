"""The launcher: plan the jobs, skip the finished ones, let Ray place the rest, merge logs.

Every (sample, epoch) is a Ray task with the sample's declared resources; Ray schedules,
retries a task whose node or worker is lost (`max_retries`), and retries the listed
infrastructure exceptions (`retry_exceptions`). The launcher only submits, watches and
merges: killing it loses nothing a node has logged, and the same command resumes.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import click
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ModelCost

from labcoat._run._inspected import inspected_results
from labcoat._run._ray._cluster import connect, node_capacities
from labcoat._run._ray._coordinator import Coordinator
from labcoat._run._ray._merge import ShardState, merge_group, read_shard, write_merged
from labcoat._run._ray._plan import Group, SampleJob, plan_groups
from labcoat._run._ray._progress import Progress
from labcoat._run._ray._spec import RunSpec
from labcoat._run._ray._worker import AttemptOutcome, run_sample
from labcoat._run._results import TaskResult
from labcoat.families import TaskEntry
from labcoat.suites import BUNDLED, resolve_target

MAX_RETRIES = 2
"""Further attempts when a node or worker is lost, or a listed exception is raised."""
RETRY_EXCEPTIONS = [OSError, ConnectionError, TimeoutError]
"""Infrastructure failures of a node (a shared filesystem hiccup); anything else is the
sample's own error, already in its log."""
DEFAULT_MAX_CONNECTIONS = 10
MERGE_EVERY_S = 15.0
POLL_S = 0.5


@dataclass
class RayRun:
    """One launch: its groups, what happened to each job, and the merged logs."""

    groups: list[Group]
    states: dict[tuple[str, str, int], ShardState] = field(default_factory=dict)
    outcomes: dict[tuple[str, str, int], AttemptOutcome] = field(default_factory=dict)
    failures: dict[tuple[str, str, int], str] = field(default_factory=dict)
    resumed: int = 0
    logs: list[EvalLog] = field(default_factory=list)
    samples: dict[str, EvalSample] = field(default_factory=dict)
    """Merged samples by their attempt log, so a merge reads each log once."""

    @property
    def eval_set_id(self) -> str:
        return "ray-" + "-".join(sorted(g.task_id[:6] for g in self.groups))

    def merge(self, group: Group, *, final: bool) -> EvalLog | None:
        # a finished shard never changes: read again only what may have
        states = [
            self.states[job.key]
            if job.key in self.states and self.states[job.key].finished
            else read_shard(job)
            for job in group.jobs
        ]
        self.states.update((s.job.key, s) for s in states)
        log = merge_group(
            group,
            states,
            self.failures,
            final=final,
            eval_set_id=self.eval_set_id,
            cache=self.samples,
        )
        if log is not None:
            write_merged(log, group.location)
            log.location = group.location
        return log


HEAD_RESOURCE = "node:__internal_head__"


def _on_head(ray: Any) -> dict[str, Any]:
    """Ray options that keep the coordinator on the head node (whose loss ends the cluster
    anyway), not on a worker node that may be lost mid-run."""
    if ray.cluster_resources().get(HEAD_RESOURCE):
        return {"resources": {HEAD_RESOURCE: 0.001}}
    return {}


def _fits(job: SampleJob, capacities: list[dict[str, float]]) -> bool:
    need = job.resources.ray_options()
    names = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}
    return any(
        all(node.get(names[k], 0.0) >= v for k, v in need.items() if v) for node in capacities
    )


def run_on_ray(
    target: str,
    entries: list[TaskEntry],
    options: Any,
    *,
    limits: dict[str, float | int],
    prices: dict[str, ModelCost],
) -> tuple[bool, list[TaskResult]]:
    """`labcoat eval/validate --ray`: the same run as `run_entries`, spread over Ray."""
    model = options.model or "none/none"
    epochs = options.epochs or 1
    # nodes do not share the launcher's working directory: local paths travel absolute
    if target not in BUNDLED:
        target = str(resolve_target(target))
    log_dir = options.log_dir if "://" in options.log_dir else os.path.abspath(options.log_dir)
    groups = plan_groups(
        target,
        entries,
        options.agents,
        sandbox=options.sandbox,
        task_args=options.task_args or {},
        log_dir=log_dir,
        epochs=epochs,
        identity={"model": model, "roles": options.model_roles or {}, "limits": limits},
    )
    run = RayRun(groups)
    for group in groups:
        for job in group.jobs:
            run.states[job.key] = read_shard(job)
    todo = [j for g in groups for j in g.jobs if not run.states[j.key].finished]
    run.resumed = sum(len(g.jobs) for g in groups) - len(todo)
    if not todo:  # everything finished at an earlier launch: only the merge is left
        run.logs = [log for g in groups if (log := run.merge(g, final=True)) is not None]
        Progress(run, enabled=options.display != "none").start(0)
        success = all(log.status == "success" for log in run.logs)
        return success, inspected_results(run.logs, options.inspect)
    ray = connect(options.ray)
    models = {model, *(options.model_roles or {}).values()} - {"none/none"}
    connections = getattr(options, "max_connections", None) or DEFAULT_MAX_CONNECTIONS
    coordinator = (
        ray.remote(Coordinator)
        .options(num_cpus=0, max_concurrency=10_000, max_restarts=-1, **_on_head(ray))
        .remote({m: connections for m in models})
    )
    spec = RunSpec(
        target=target,
        sandbox=options.sandbox,
        model=model,
        model_roles=options.model_roles or None,
        model_args=getattr(options, "model_args", None) or {},
        task_args=options.task_args or {},
        limits=limits,
        prices=prices,
        max_connections=connections if models else None,
        model_timeout=options.model_timeout,
        coordinator=coordinator,
    )
    remote = ray.remote(run_sample)
    progress = Progress(run, enabled=options.display != "none")
    try:
        _execute(ray, run, todo, remote, spec, coordinator, progress, options.max_samples)
    except KeyboardInterrupt:
        progress.stop()
        for group in groups:
            run.merge(group, final=False)
        raise
    finally:
        progress.stop()
    run.logs = [log for g in groups if (log := run.merge(g, final=True)) is not None]
    progress.summary()
    unlogged = [g for g in groups if not any(log.location == g.location for log in run.logs)]
    for group in unlogged:  # not one sample got as far as Inspect: say why, loudly
        reasons = {run.failures[j.key] for j in group.jobs if j.key in run.failures}
        click.echo(
            f"labcoat: {group.title}: no sample started, so no log was written: "
            + "; ".join(sorted(reasons)[:3]),
            err=True,
        )
    success = not unlogged and all(log.status == "success" for log in run.logs)
    return success, inspected_results(run.logs, options.inspect)


def _execute(
    ray: Any,
    run: RayRun,
    todo: list[SampleJob],
    remote: Any,
    spec: RunSpec,
    coordinator: Any,
    progress: Progress,
    max_in_flight: int | None,
) -> None:
    by_group = {g.key: g for g in run.groups}
    capacities = node_capacities(ray)
    pending: deque[SampleJob] = deque()
    for job in todo:
        if _fits(job, capacities):
            pending.append(job)
        else:
            run.failures[job.key] = (
                f"no node of the cluster has {job.resources.describe()} for this sample; "
                "add one and run the same command again"
            )
    in_flight: dict[Any, SampleJob] = {}
    alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
    last_merge = time.monotonic()
    dirty: set[str] = set()
    progress.start(len(todo) - len(pending))
    while pending or in_flight:
        while pending and (not max_in_flight or len(in_flight) < max_in_flight):
            job = pending.popleft()
            ref = remote.options(
                max_retries=MAX_RETRIES,
                retry_exceptions=RETRY_EXCEPTIONS,
                **job.resources.ray_options(),
            ).remote(job, spec)
            in_flight[ref] = job
        ready, _ = ray.wait(list(in_flight), num_returns=len(in_flight), timeout=POLL_S)
        for ref in ready:
            job = in_flight.pop(ref)
            try:
                outcome = ray.get(ref)
                run.outcomes[job.key] = outcome
            except Exception as ex:  # retries used up: the sample is an error, with why
                run.failures[job.key] = _reason(ex)
            dirty.add(job.group)
            progress.finished(job, run.outcomes.get(job.key), run.failures.get(job.key))
        alive = _release_lost_nodes(ray, coordinator, alive)
        done_groups = {
            g for g in dirty if not any(j.group == g for j in (*pending, *in_flight.values()))
        }
        if done_groups or time.monotonic() - last_merge > MERGE_EVERY_S:
            for key in sorted(dirty):
                run.merge(by_group[key], final=key in done_groups)
            dirty.clear()
            last_merge = time.monotonic()
        progress.update(coordinator, in_flight.values(), pending)


def _release_lost_nodes(ray: Any, coordinator: Any, alive: set[str]) -> set[str]:
    """Slots held by processes on a node that died are given back."""
    now = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
    for node_id in alive - now:
        coordinator.release_holder.remote(node_id)
    return now


def _reason(ex: Exception) -> str:
    """Why a job's Ray task failed: the error's last line (its traceback's cause)."""
    lines = [line.strip() for line in str(ex).strip().splitlines() if line.strip()]
    last = lines[-1][:300] if lines else type(ex).__name__
    from ray.exceptions import RayTaskError

    if isinstance(ex, RayTaskError):
        return f"the sample's Ray task raised {last}"
    return f"the sample's Ray task failed after {MAX_RETRIES + 1} attempt(s): {last}"

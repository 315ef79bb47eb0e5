"""The launcher: plan the jobs, skip the finished ones, let Ray place the rest, merge logs.

Every (sample, epoch) is a Ray task with the sample's declared resources; Ray places it.
The launcher keeps the queue (handing Ray what the cluster can start now, and one job
more per node so a freed slot never waits for the launcher), retries an
attempt whose node or worker is lost, or which raised a listed infrastructure exception,
ahead of new work, records how each such attempt ended, and merges the logs: killing it
loses nothing a node has logged, and the same command resumes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import click
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ModelCost

from labcoat._run._budget import NOT_STARTED, is_not_started
from labcoat._run._config import RunConfig
from labcoat._run._inspected import inspected_results
from labcoat._run._ray._cluster import LOCAL, connect
from labcoat._run._ray._coordinator import Coordinator
from labcoat._run._ray._merge import ShardState, merge_group, read_shard, write_merged
from labcoat._run._ray._plan import Group, SampleJob, plan_groups
from labcoat._run._ray._progress import Progress
from labcoat._run._ray._spec import RunSpec
from labcoat._run._ray._worker import END_REASONS, AttemptOutcome, run_sample, write_end
from labcoat._run._results import TaskResult, only_not_run
from labcoat.families import TaskEntry
from labcoat.suites import BUNDLED, resolve_target

MAX_RETRIES = 2
"""Further attempts when a node or worker is lost, or a listed exception is raised (the
launcher retries, ahead of new work; Ray itself does not)."""
RETRY_EXCEPTIONS = [OSError, ConnectionError, TimeoutError]
"""Infrastructure failures of a node (a shared filesystem hiccup); anything else is the
sample's own error, already in its log."""
DEFAULT_MAX_CONNECTIONS = 10
MERGE_EVERY_S = 15.0
POLL_S = 0.5
QUEUED_PER_NODE = 1
"""Jobs handed to Ray beyond what the cluster can start now, per node: where a slot frees,
the next sample is already there and starts without a round trip through the launcher
(seconds on a loaded machine). A lost sample's retry displaces them."""


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


def _generate_identity(options: RunConfig) -> dict[str, Any]:
    """What else decides a group's results, only when given (earlier groups keep their
    ids): the model's generate config and base URL."""
    given = {"generate": options.generate, "model_base_url": options.model_base_url}
    return {k: v for k, v in given.items() if v}


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
    options: RunConfig,
    *,
    prices: dict[str, ModelCost],
) -> tuple[bool, list[TaskResult]]:
    """`labcoat eval/validate --ray`: the same run as `run_entries`, spread over Ray."""
    model = options.inspect_model
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
        identity={
            "model": model,
            "roles": options.model_roles or {},
            "limits": options.limits.inspect_args(),
        }
        | _generate_identity(options),
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
    ray = connect(options.ray or LOCAL)  # run_entries calls this only with --ray
    connections = options.max_connections or DEFAULT_MAX_CONNECTIONS
    ledger = options.ledger
    launch = options.launch or uuid.uuid4().hex[:12]
    spec = RunSpec(
        config=options,
        target=target,
        prices=prices,
        launch=launch,
        keeps_account=ledger is not None,
    )
    models = spec.models
    coordinator = (
        ray.remote(Coordinator)
        .options(num_cpus=0, max_concurrency=10_000, max_restarts=-1, **_on_head(ray))
        .remote({m: connections for m in models}, options.campaign, ledger, launch)
    )
    spec = replace(spec, max_connections=connections if models else None, coordinator=coordinator)
    remote = ray.remote(run_sample)
    progress = Progress(run, enabled=options.display != "none")
    try:
        with _term_interrupts():
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
    _warn_if_niced(run.outcomes.values())
    unlogged = [g for g in groups if not any(log.location == g.location for log in run.logs)]
    # a group the budget kept from starting has no log to say so: its rows say it
    kept = [g for g in unlogged if all(is_not_started(run.failures.get(j.key)) for j in g.jobs)]
    unlogged = [g for g in unlogged if g not in kept]
    for group in unlogged:  # not one sample got as far as Inspect: say why, loudly
        reasons = {run.failures[j.key] for j in group.jobs if j.key in run.failures}
        click.echo(
            f"labcoat: {group.title}: no sample started, so no log was written: "
            + "; ".join(sorted(reasons)[:3]),
            err=True,
        )
    success = not unlogged and all(log.status == "success" or only_not_run(log) for log in run.logs)
    results = inspected_results(run.logs, options.inspect)
    return success, results + [r for g in kept for r in _not_started_rows(g)]


def _not_started_rows(group: Group) -> list[TaskResult]:
    """A result per task of a group none of whose samples the budget let start."""
    rows: dict[str, TaskResult] = {}
    for job in group.jobs:
        sample = group.samples[str(job.sample_id)]
        task_id = str((sample.metadata or {}).get("task_id", sample.id))
        row = rows.setdefault(task_id, TaskResult(task_id, group.family, group.agent))
        row.not_started += 1
    return list(rows.values())


def _warn_if_niced(outcomes: Iterable[AttemptOutcome]) -> None:
    niced = [o for o in outcomes if o.niceness[0] > o.niceness[1]]
    if niced:
        levels = ", ".join(str(n) for n in sorted({o.niceness[0] for o in niced}))
        click.echo(
            f"labcoat: {len(niced)} sample(s) ran at Ray's worker niceness ({levels}), below "
            "their nodes' priority: the nodes' other processes came first, timing-based "
            "scores included; start the nodes with RAY_worker_niceness=0 (or as root)",
            err=True,
        )


@dataclass
class _InFlight:
    job: SampleJob
    attempt: str
    queued: bool = False
    """Handed to Ray ahead of room for it (`QUEUED_PER_NODE`)."""
    displaced: bool = False
    """Cancelled before it started, to let a lost sample's retry go first."""


@contextlib.contextmanager
def _term_interrupts() -> Iterator[None]:
    """SIGTERM stops the launcher as Ctrl-C does (a batch system's stop, `kill`), so it
    records that the attempts it started were ended by its stop."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    """Hand Ray what the cluster can start now and one job more per node, a lost sample's
    retry first.

    The launcher keeps the queue: a job goes to Ray when the free resources the launcher
    sees (alive nodes, less what its running jobs hold) fit it, and `QUEUED_PER_NODE`
    more wait in Ray's own queue, so a freed slot starts the next sample at once. A retry,
    put at the front, cancels those queued jobs that have not started (they go back to
    the front of the new work), so it starts as soon as a node can take it instead of
    behind every sample not yet started. The launcher retries, not Ray: it sees how each
    attempt ended and records it beside the attempt's marker (`write_end`)."""
    by_group = {g.key: g for g in run.groups}
    nodes = _alive_nodes(ray)
    capacities = [dict(n["Resources"]) for n in nodes.values()]
    pending: deque[SampleJob] = deque()
    for job in todo:
        if _fits(job, capacities):
            pending.append(job)
        else:
            run.failures[job.key] = (
                f"no node of the cluster has {job.resources.describe()} for this sample; "
                "add one and run the same command again"
            )
    retrying: set[tuple[str, str, int]] = set()
    tries: dict[tuple[str, str, int], int] = {}
    in_flight: dict[Any, _InFlight] = {}
    last_merge = time.monotonic()
    dirty: set[str] = set()
    progress.start(len(todo) - len(pending))

    def submit(job: SampleJob, queued: bool) -> None:
        pending.remove(job)
        retrying.discard(job.key)
        tries[job.key] = tries.get(job.key, 0) + 1
        attempt = uuid.uuid4().hex[:12]
        ref = remote.options(
            max_retries=0, retry_exceptions=False, **job.resources.ray_options()
        ).remote(job, spec, attempt)
        in_flight[ref] = _InFlight(job, attempt, queued=queued)

    try:
        while pending or in_flight:
            if pending and (spent := _budget_spent(ray, coordinator)) is not None:
                for job in list(pending):  # fail closed: nothing more starts
                    pending.remove(job)
                    run.failures[job.key] = f"{NOT_STARTED}: {spent}"
                    dirty.add(job.group)
                    progress.finished(job, None, run.failures[job.key])
            if pending:
                placed = _placed(ray, coordinator) if in_flight else {}
                free = _free(nodes, [(f.job, placed.get(f.job.key)) for f in in_flight.values()])
                room = None if not max_in_flight else max_in_flight - len(in_flight)
                for job in admit(pending, retrying, free, room):
                    submit(job, queued=False)
                if retrying:  # what waits in Ray's queue would start before the retry
                    _displace(ray, in_flight, placed)
                else:
                    room = None if not max_in_flight else max_in_flight - len(in_flight)
                    waiting = sum(f.job.key not in placed for f in in_flight.values())
                    extra = QUEUED_PER_NODE * len(nodes) - waiting
                    extra = extra if room is None else min(extra, room)
                    for job in list(pending)[: max(0, extra)]:
                        submit(job, queued=True)
            if in_flight:  # back as soon as one ends (its room goes to the next), with
                # every other that has ended by then
                ready, rest = ray.wait(list(in_flight), num_returns=1, timeout=POLL_S)
                if ready and rest:
                    ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            else:  # waiting for a node with room (one lost, its replacement not yet up)
                ready = []
                time.sleep(POLL_S)
            lost_nodes = set(nodes)
            nodes = _alive_nodes(ray)
            lost_nodes -= set(nodes)
            for node_id in lost_nodes:  # slots held by processes on a dead node come back
                coordinator.release_holder.remote(node_id)
            for ref in ready:
                flight = in_flight.pop(ref)
                job = flight.job
                try:
                    run.outcomes[job.key] = ray.get(ref)
                except Exception as ex:
                    if flight.displaced and _cancelled(ex):
                        if _attempt_node(job, flight.attempt) is not None:  # it had begun
                            write_end(job.shard_dir, flight.attempt, "displaced")
                        tries[job.key] -= 1
                        ahead = sum(1 for j in pending if j.key in retrying)
                        pending.insert(ahead, job)  # first of the new work again
                        continue
                    kind, detail = _ended(ex, _attempt_node(job, flight.attempt), set(nodes))
                    if kind is not None:
                        write_end(job.shard_dir, flight.attempt, kind, detail)
                    if kind is not None and tries[job.key] <= MAX_RETRIES:
                        pending.appendleft(job)  # ahead of every sample not yet started
                        retrying.add(job.key)
                        progress.retrying(job, END_REASONS[kind])
                        continue
                    run.failures[job.key] = _reason(ex, tries[job.key])
                dirty.add(job.group)
                progress.finished(job, run.outcomes.get(job.key), run.failures.get(job.key))
            busy = {j.group for j in pending} | {f.job.group for f in in_flight.values()}
            done_groups = dirty - busy
            if done_groups or time.monotonic() - last_merge > MERGE_EVERY_S:
                for key in sorted(dirty):
                    run.merge(by_group[key], final=key in done_groups)
                dirty.clear()
                last_merge = time.monotonic()
            progress.update(coordinator, (f.job for f in in_flight.values()), pending)
    except KeyboardInterrupt:
        # the attempts this launcher started end with it: say so where they are recorded
        for flight in in_flight.values():
            with contextlib.suppress(Exception):
                if _attempt_node(flight.job, flight.attempt) is not None:
                    write_end(flight.job.shard_dir, flight.attempt, "launcher_interrupted")
        raise


def _budget_spent(ray: Any, coordinator: Any) -> str | None:
    """Why the run's budget is spent (None: there is some left, or no budget)."""
    try:
        return ray.get(coordinator.budget_exhausted.remote(), timeout=5)
    except Exception:  # the coordinator restarting: its nodes' samples ask it themselves
        return None


def _displace(ray: Any, in_flight: dict[Any, _InFlight], placed: dict[Any, str]) -> None:
    """Cancel the queued jobs that have not started, so a waiting retry goes first."""
    for ref, flight in in_flight.items():
        if flight.queued and not flight.displaced and flight.job.key not in placed:
            flight.displaced = True
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=False)


def _cancelled(ex: Exception) -> bool:
    from ray.exceptions import TaskCancelledError

    return isinstance(ex, TaskCancelledError)


def _alive_nodes(ray: Any) -> dict[str, dict[str, Any]]:
    return {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}


def _placed(ray: Any, coordinator: Any) -> dict[tuple[str, str, int], str]:
    """The node each started job runs on, as the workers told the coordinator."""
    try:
        board = ray.get(coordinator.board.remote(), timeout=5)
    except Exception:  # the coordinator restarting: place the running jobs by first fit
        return {}
    return {tuple(key): entry["node_id"] for key, entry in board.items()}


RESOURCE_NAMES = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}


def _take(free: dict[str, float], job: SampleJob) -> bool:
    need = {RESOURCE_NAMES[k]: v for k, v in job.resources.ray_options().items() if v}
    if any(free.get(name, 0.0) < v for name, v in need.items()):
        return False
    for name, v in need.items():
        free[name] = free.get(name, 0.0) - v
    return True


def _free(
    nodes: dict[str, dict[str, Any]], running: list[tuple[SampleJob, str | None]]
) -> list[dict[str, float]]:
    """Each alive node's resources less what the launcher's running jobs hold there (a job
    whose node is not known yet counts on the first node it fits)."""
    free = {node_id: dict(n["Resources"]) for node_id, n in nodes.items()}
    unplaced = []
    for job, node_id in running:
        if node_id in free:
            _take(free[node_id], job)
        else:
            unplaced.append(job)
    for job in unplaced:
        any(_take(node, job) for node in free.values())
    return list(free.values())


def admit(
    pending: Iterable[SampleJob],
    priority: set[tuple[str, str, int]],
    free: list[dict[str, float]],
    room: int | None,
) -> list[SampleJob]:
    """The pending jobs to hand Ray now, in queue order: each that fits what is free
    (first fit, taken from `free`); a job that does not fit yet waits, and nothing passes
    a waiting retry (`priority`), so a lost sample never waits behind new work."""
    chosen: list[SampleJob] = []
    for job in pending:
        if room is not None and len(chosen) >= room:
            break
        if any(_take(node, job) for node in free):
            chosen.append(job)
        elif job.key in priority:
            break
    return chosen


def _attempt_node(job: SampleJob, attempt: str) -> str | None:
    """The node an attempt started on, from its marker (None: it never started)."""
    for a in read_shard(job).attempts:
        if a.marker.get("attempt") == attempt:
            return str(a.marker.get("node_id") or "") or None
    return None


def _ended(ex: Exception, node_id: str | None, alive: set[str]) -> tuple[str | None, str]:
    """How an attempt whose Ray task failed ended: a kind of `END_REASONS` (retried), or
    None for the sample's own error (in its log; not retried)."""
    from ray.exceptions import NodeDiedError, RayError, RayTaskError, TaskCancelledError

    if isinstance(ex, RayTaskError):
        cause = getattr(ex, "cause", None)
        if isinstance(cause, tuple(RETRY_EXCEPTIONS)):
            return "raised", f"{type(cause).__name__}: {cause}"
        return None, ""
    if isinstance(ex, TaskCancelledError) or not isinstance(ex, RayError):
        return None, ""
    if isinstance(ex, NodeDiedError) or (node_id is not None and node_id not in alive):
        return "node_lost", f"node {node_id[:12]}" if node_id else ""
    return "worker_crashed", type(ex).__name__


def _reason(ex: Exception, attempts: int) -> str:
    """Why a job's Ray task failed: the error's last line (its traceback's cause)."""
    lines = [line.strip() for line in str(ex).strip().splitlines() if line.strip()]
    last = lines[-1][:300] if lines else type(ex).__name__
    from ray.exceptions import RayTaskError

    if isinstance(ex, RayTaskError):
        return f"the sample's Ray task raised {last}"
    return f"the sample's Ray task failed after {attempts} attempt(s): {last}"

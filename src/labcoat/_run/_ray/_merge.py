"""One log per Inspect task from its shards, as a local run would have written it.

Each job's shard directory holds its attempt markers and the `.eval` log of each attempt
that got as far as starting Inspect. The merged log takes every sample's chosen attempt
(the one that succeeded, else the last that finished with an error), sets its epoch,
records earlier attempts in the sample's `error_retries` (why it was retried: a lost node,
an error), and lets Inspect recompute the task's metrics.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from inspect_ai._util.file import file, filesystem
from inspect_ai.log import (
    EvalError,
    EvalLog,
    EvalRetryError,
    EvalSample,
    EvalShardEntry,
    EvalShards,
    EvalStats,
    read_eval_log,
    recompute_metrics,
    write_eval_log,
)
from inspect_ai.model import ModelOutput

from labcoat._run._ray._plan import Group, SampleJob
from labcoat._run._ray._worker import (
    ATTEMPT_SUFFIX,
    END_REASONS,
    END_SUFFIX,
    LAUNCHER_STOPPED,
    RAY_METADATA,
)
from labcoat._util.atomic import atomic_create

FINISHED = ("success", "error", "cancelled")


@dataclass
class Attempt:
    marker: dict
    log: str | None = None
    header: EvalLog | None = None
    end: dict | None = None
    """The launcher's record of how it ended without its log (`<attempt>.end`), if any."""

    @property
    def status(self) -> str:
        return self.header.status if self.header is not None else "lost"

    def reason(self) -> str:
        where = f"node {self.marker.get('node_id', '?')[:12]} ({self.marker.get('host', '?')})"
        started = self.marker.get("started", "?")
        if self.header is not None and self.header.error is not None:
            first = self.header.error.message.strip().splitlines()[:1]
            return f"attempt started {started} on {where} failed: {first[0] if first else ''}"
        return f"attempt started {started} on {where} stopped without finishing: {self.cause()}"

    def cause(self) -> str:
        """Why an attempt without a finished log stopped, as far as the records say."""
        if self.end is not None:
            kind = str(self.end.get("kind", ""))
            detail = str(self.end.get("detail") or "")
            text = END_REASONS.get(kind, kind or "unknown")
            return f"{text} ({detail})" if detail else text
        if self.marker.get("launch"):  # a launcher records every end it sees
            return LAUNCHER_STOPPED
        return "the node or its worker was lost"  # started before launches were recorded


@dataclass
class ShardState:
    job: SampleJob
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def chosen(self) -> Attempt | None:
        """The attempt whose sample counts: the success, else the last finished one."""
        done = [a for a in self.attempts if a.status in FINISHED]
        success = [a for a in done if a.status == "success"]
        return success[-1] if success else (done[-1] if done else None)

    @property
    def finished(self) -> bool:
        chosen = self.chosen
        return chosen is not None and chosen.status == "success"

    def retried(self) -> list[Attempt]:
        chosen = self.chosen
        if chosen is None:
            return []
        return self.attempts[: self.attempts.index(chosen)]


def read_shard(job: SampleJob) -> ShardState:
    """The job's attempts in the order they started, each with its log's header."""
    state = ShardState(job)
    fs = filesystem(job.shard_dir)
    if not fs.exists(job.shard_dir):
        return state
    markers: dict[str, Attempt] = {}
    logs: list[str] = []
    ends: dict[str, dict] = {}
    for info in sorted(fs.ls(job.shard_dir), key=lambda i: i.name):
        location = info.name
        if location.endswith(ATTEMPT_SUFFIX):
            with file(location, "r") as f:
                marker = json.loads(f.read())
            markers[marker["attempt"]] = Attempt(marker)
        elif location.endswith(END_SUFFIX):
            with file(location, "r") as f:
                end = json.loads(f.read())
            ends[str(end.get("attempt"))] = end
        elif location.endswith(".eval"):
            logs.append(location)
    for attempt_id, end in ends.items():
        if attempt_id in markers:
            markers[attempt_id].end = end
    for location in logs:
        try:
            header = read_eval_log(location, header_only=True)
        except Exception:  # an attempt killed while writing: counts as lost
            continue
        logged_id = ((header.eval.metadata or {}).get(RAY_METADATA) or {}).get("attempt")
        attempt = markers.get(logged_id) if logged_id else None
        if attempt is None:
            attempt = markers.setdefault(str(logged_id or location), Attempt({}))
        attempt.log, attempt.header = location, header
    state.attempts = sorted(markers.values(), key=lambda a: a.marker.get("started", ""))
    return state


def _merged_sample(state: ShardState, cache: dict[str, EvalSample]) -> EvalSample | None:
    chosen = state.chosen
    if chosen is None or chosen.log is None:
        return None
    sample = cache.get(chosen.log)
    if sample is None:
        samples = read_eval_log(chosen.log).samples or []
        if not samples:
            return None
        sample = cache[chosen.log] = samples[0]
    retries = [
        EvalRetryError(message=a.reason(), traceback="", traceback_ansi="") for a in state.retried()
    ]
    return sample.model_copy(
        update={
            "epoch": state.job.epoch,
            "error_retries": (retries + list(sample.error_retries or [])) or None,
        }
    )


def _failed_sample(group: Group, job: SampleJob, reason: str) -> EvalSample:
    """A sample whose Ray task failed before Inspect logged it: an error, with why."""
    source = group.samples[str(job.sample_id)]
    return EvalSample(
        id=job.sample_id,
        epoch=job.epoch,
        input=source.input,
        target=source.target,
        metadata=source.metadata or {},
        messages=[],
        output=ModelOutput(),
        error=EvalError(message=reason, traceback="", traceback_ansi=""),
    )


def _ledger_entry(job: SampleJob, attempt: Attempt) -> EvalShardEntry:
    header = attempt.header
    assert header is not None and attempt.log is not None
    ids = [str(i) for i in header.eval.dataset.sample_ids or []]
    return EvalShardEntry(
        shard=job.shard_dir.rsplit("/", 1)[-1],
        log=attempt.log.rsplit("/", 1)[-1],
        eval_set_id=header.eval.eval_set_id,
        status=header.status,
        error=header.error,
        samples=1,
        selected=len(ids),
        selection_digest=hashlib.sha256(json.dumps(ids).encode()).hexdigest(),
        started_at=header.stats.started_at,
        completed_at=header.stats.completed_at,
        model_usage=header.stats.model_usage,
        role_usage=header.stats.role_usage,
        size=0,
    )


def merge_group(
    group: Group,
    states: Iterable[ShardState],
    failures: dict[tuple[str, str, int], str] | None = None,
    *,
    final: bool,
    eval_set_id: str,
    cache: dict[str, EvalSample] | None = None,
) -> EvalLog | None:
    """The group's log from its shards; None while no attempt has a header to build on."""
    states = list(states)
    failures = failures or {}
    base = next(
        (a.header for s in states for a in reversed(s.attempts) if a.header is not None), None
    )
    if base is None:
        return None
    order = {sid: i for i, sid in enumerate(group.samples)}
    samples: list[EvalSample] = []
    ledger: list[EvalShardEntry] = []
    errors: list[str] = []
    stats = EvalStats()
    for state in states:
        sample = _merged_sample(state, {} if cache is None else cache)
        if sample is None and state.job.key in failures:
            sample = _failed_sample(group, state.job, failures[state.job.key])
        if sample is None:
            continue
        samples.append(sample)
        if sample.error is not None:
            errors.append(f"{sample.id} (epoch {sample.epoch}): {sample.error.message}")
        chosen = state.chosen
        if chosen is not None and chosen.header is not None:
            ledger.append(_ledger_entry(state.job, chosen))
            _add_stats(stats, chosen.header.stats)
    samples.sort(key=lambda s: (order.get(str(s.id), 0), s.epoch))
    complete = len(samples) == len(group.jobs) and not errors
    status = "success" if complete else ("error" if final else "started")
    metadata = {k: v for k, v in (base.eval.metadata or {}).items() if k != RAY_METADATA}
    ids = list(group.samples)
    spec = base.eval.model_copy(
        update={
            "eval_id": group.task_id,
            "run_id": eval_set_id,
            "eval_set_id": eval_set_id,
            "task_id": group.task_id,
            "created": _created(group.location, base.eval.created),
            "task_args": group.task_args,
            "task_args_passed": group.task_args,
            "dataset": base.eval.dataset.model_copy(
                update={"samples": len(ids), "sample_ids": [s.id for s in group.samples.values()]}
            ),
            "config": base.eval.config.model_copy(update={"epochs": group.epochs}),
            "metadata": metadata or None,
            "shards": EvalShards(selection="ids", ledger=ledger),
        }
    )
    if status == "started":
        stats.completed_at = ""
    error = None
    if status == "error":
        missing = len(group.jobs) - len(samples)
        message = "; ".join(errors[:5]) or f"{missing} sample(s) did not finish"
        error = EvalError(message=message, traceback="", traceback_ansi="")
    log = EvalLog(
        version=base.version,
        status=status,  # type: ignore[arg-type]
        eval=spec,
        plan=base.plan,
        samples=samples,
        stats=stats,
        error=error,
    )
    if samples:
        recompute_metrics(log)
    return log


def _created(location: str, fallback: str) -> str:
    """The merged log's creation time: the stamp its name got at the first launch."""
    stem = location.rsplit("/", 1)[-1].split("_", 1)[0]
    try:
        date, time_ = stem.split("T")
        hh, mm, rest = time_.split("-", 2)
        ss = rest.split("+")[0]
        return f"{date}T{hh}:{mm}:{ss}+00:00"
    except ValueError:
        return fallback


def _add_stats(total: EvalStats, part: EvalStats) -> None:
    if part.started_at and (not total.started_at or part.started_at < total.started_at):
        total.started_at = part.started_at
    if part.completed_at and part.completed_at > (total.completed_at or ""):
        total.completed_at = part.completed_at
    pairs = ((total.model_usage, part.model_usage), (total.role_usage, part.role_usage))
    for target, source in pairs:
        for name, usage in source.items():
            target[name] = target[name] + usage if name in target else usage


def write_merged(log: EvalLog, location: str) -> None:
    """Write the merged log; locally through a temporary file, so readers never see half."""
    if "://" in location and not location.startswith("file://"):
        write_eval_log(log, location)
        return
    path = location.removeprefix("file://")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    # the temporary's name is one no log listing picks up while it is being written
    atomic_create(path, lambda partial: write_eval_log(log, str(partial), format="eval"))

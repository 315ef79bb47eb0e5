"""What a Ray run does: one job per sample and epoch, grouped into one log per Inspect task.

Each (family, agent) Inspect task of the run becomes a *group*: its merged log
`<log dir>/<created>_<task>_<id>.eval` and, beside it, Inspect's shard layout
`<name>.shards/<k>/` with one shard per (sample, epoch) holding that job's attempt logs.
The group's id is a hash of everything that decides what its samples compute, so running
the same command again finds the same group and resumes it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from inspect_ai import Task
from inspect_ai._util.file import filesystem
from inspect_ai.dataset import Sample
from inspect_ai.util import SandboxEnvironmentSpec

from labcoat._errors import LabcoatError
from labcoat.families import TaskEntry, task_function
from labcoat.sandbox import BwrapConfig

MIB = 1024 * 1024
DEFAULT_MEMORY_MB = 4096
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Resources:
    """What one sample reserves on a node: Ray schedules it where these are free."""

    cpus: float = 1.0
    memory_mb: int = DEFAULT_MEMORY_MB
    gpus: float = 0.0

    def ray_options(self) -> dict[str, Any]:
        return {"num_cpus": self.cpus, "num_gpus": self.gpus, "memory": self.memory_mb * MIB}

    def describe(self) -> str:
        gpus = f", {self.gpus:g} GPU" if self.gpus else ""
        return f"{self.cpus:g} CPU, {self.memory_mb / 1024:g} GiB{gpus}"


def sample_resources(sample: Sample, task: Task) -> Resources:
    """The sample's declared resources: the family's `resources` metadata (sidecar or
    manifest) first, else its sandbox's limits, else one CPU and the default memory."""
    declared = (sample.metadata or {}).get("resources") or {}
    spec = sample.sandbox or task.sandbox
    config = spec.config if isinstance(spec, SandboxEnvironmentSpec) else None
    config = config if isinstance(config, BwrapConfig) else None
    cpus = declared.get("cpus") or (config.cpus if config else None) or 1.0
    if declared.get("memory_gb"):
        memory_mb = int(float(declared["memory_gb"]) * 1024)
    else:
        memory_mb = (config.memory_mb if config else None) or DEFAULT_MEMORY_MB
    gpus = declared.get("gpus")
    if gpus is None:
        gpus = config.gpus if config is not None else 0
    return Resources(cpus=float(cpus), memory_mb=int(memory_mb), gpus=float(gpus))


@dataclass(frozen=True)
class SampleJob:
    """One sample in one epoch: a Ray task that runs Inspect on a node."""

    group: str
    family: str
    agent: str
    entry_id: str
    """The labcoat task the sample belongs to (what the node builds)."""
    sample_id: str | int
    epoch: int
    resources: Resources
    shard_dir: str

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.group, str(self.sample_id), self.epoch)

    @property
    def label(self) -> str:
        return f"{self.agent} {self.sample_id} (epoch {self.epoch})"


@dataclass
class Group:
    """One (family, agent) Inspect task: one merged log in the log dir."""

    family: str
    agent: str
    task_name: str
    task_id: str
    location: str
    task_args: dict[str, Any]
    samples: dict[str, Sample]
    """By sample id (as a string), in dataset order."""
    epochs: int
    jobs: list[SampleJob] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.task_id

    @property
    def shards_dir(self) -> str:
        return self.location.removesuffix(".eval") + ".shards"

    @property
    def title(self) -> str:
        return f"{self.family}/{self.agent}"


def shard_name(sample_id: str | int, epoch: int) -> str:
    """A shard directory name: readable, filesystem-safe, unique per (sample, epoch)."""
    text = str(sample_id)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"e{epoch}-{_UNSAFE.sub('_', text)[:60]}-{digest}"


def group_identity(**parts: Any) -> str:
    """A stable id from what decides a group's results (JSON of the parts, hashed)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:22]


def _existing_name(log_dir: str, task_name: str, task_id: str) -> str | None:
    """The merged log's file stem from an earlier launch of the same group, if any."""
    fs = filesystem(log_dir)
    if not fs.exists(log_dir):
        return None
    suffix = f"_{task_name}_{task_id}"
    for info in fs.ls(log_dir):
        name = info.name.rstrip("/").rsplit("/", 1)[-1]
        for ending in (".shards", ".eval"):
            if name.endswith(suffix + ending):
                return name.removesuffix(ending)
    return None


def _log_name(log_dir: str, task_name: str, task_id: str) -> str:
    found = _existing_name(log_dir, task_name, task_id)
    if found:
        return found
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S+00-00")
    return f"{created}_{task_name}_{task_id}"


def family_task(
    target: str, family: str, entry_ids: list[str], agent: str, sandbox: str, args: dict[str, Any]
) -> Task:
    """The family's own @task, as `labcoat eval` builds it (no local sandbox check: the
    launcher only plans; sandboxes start on the nodes)."""
    return task_function(family)(
        target=target, tasks=entry_ids, agent=agent, sandbox=sandbox, **args
    )


def plan_groups(
    target: str,
    entries: Iterable[TaskEntry],
    agents: list[str],
    *,
    sandbox: str,
    task_args: dict[str, dict[str, Any]],
    log_dir: str,
    epochs: int,
    identity: dict[str, Any],
) -> list[Group]:
    """Every group of the run with its jobs, in the order a local run would list them."""
    by_family: dict[str, list[str]] = {}
    for entry in entries:
        by_family.setdefault(entry.family, []).append(entry.id)
    groups = []
    for agent in agents:
        for family, ids in by_family.items():
            args = task_args.get(family, {})
            task = family_task(target, family, ids, agent, sandbox, args)
            task_name = task.name.rsplit("/", 1)[-1]
            task_id = group_identity(
                target=target, family=family, agent=agent, sandbox=sandbox, tasks=ids,
                args=args, epochs=epochs, **identity,
            )  # fmt: skip
            location = f"{log_dir.rstrip('/')}/{_log_name(log_dir, task_name, task_id)}.eval"
            samples = {str(s.id): s for s in task.dataset}
            group = Group(
                family=family,
                agent=agent,
                task_name=task_name,
                task_id=task_id,
                location=location,
                task_args={"target": target, "tasks": ids, "agent": agent, "sandbox": sandbox,
                           **args},
                samples=samples,
                epochs=epochs,
            )  # fmt: skip
            known = set(ids)
            for epoch in range(1, epochs + 1):
                for sample in task.dataset:
                    entry_id = str((sample.metadata or {}).get("task_id", sample.id))
                    if entry_id not in known:
                        raise LabcoatError(
                            f"{family}: sample {sample.id} names task {entry_id!r}, which is "
                            "not among the selected tasks"
                        )
                    assert sample.id is not None
                    group.jobs.append(
                        SampleJob(
                            group=group.key,
                            family=family,
                            agent=agent,
                            entry_id=entry_id,
                            sample_id=sample.id,
                            epoch=epoch,
                            resources=sample_resources(sample, task),
                            shard_dir=f"{group.shards_dir}/{shard_name(sample.id, epoch)}",
                        )
                    )
            groups.append(group)
    return groups

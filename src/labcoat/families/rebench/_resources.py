"""A task's resources: the manifest's request, with labcoat.yaml's own settings on top.

The standard says a runner MUST give the task environment the resources its manifest
asks for; labcoat enforces them as it does a sidecar's: memory as the sample's memory
limit, CPUs as a CPU quota and thread counts, GPUs as the devices bound in (a task that
asks for GPUs on a machine without any is unavailable, with that reason), storage as the
quota on everything the agent can write.
"""

from __future__ import annotations

from dataclasses import dataclass

from labcoat.families.rebench._family import TaskFamilyDir
from labcoat.sandbox import DEFAULT_DISK_MB

DEFAULT_MEMORY_GB = 4


@dataclass(frozen=True)
class TaskResources:
    memory_mb: int
    cpus: float | None
    gpus: int
    gpu_model: str | None = None
    disk_mb: int = DEFAULT_DISK_MB
    """Quota on the agent's writable areas: labcoat.yaml's `disk_gb`, else the manifest's
    `storage_gb`, else the default."""


def task_resources(family: TaskFamilyDir, task: str) -> TaskResources:
    """Each figure from labcoat.yaml when it sets it, else from manifest.yaml, else the
    sidecar's defaults (for sidecar tasks) or labcoat's (4 GiB, all CPUs, no GPU)."""
    spec = family.sidecar.tasks.get(task) if family.sidecar else None
    sidecar = spec.resources if spec else None
    explicit = sidecar.model_fields_set if sidecar else set()
    manifest = family.manifest.task(task).resources if family.manifest else None

    def pick(field: str, from_manifest: float | None, default: float | None) -> float | None:
        if sidecar is not None and field in explicit:
            return getattr(sidecar, field)
        if from_manifest is not None:
            return from_manifest
        return getattr(sidecar, field) if sidecar is not None else default

    gpu = manifest.gpu if manifest else None
    memory_gb = pick("memory_gb", manifest.memory_gb if manifest else None, DEFAULT_MEMORY_GB)
    cpus = pick("cpus", manifest.cpus if manifest else None, None)
    gpus = pick("gpus", gpu.count_range[0] if gpu else None, 0)
    disk_gb = pick("disk_gb", manifest.storage_gb if manifest else None, None)
    return TaskResources(
        memory_mb=int((memory_gb or DEFAULT_MEMORY_GB) * 1024),
        cpus=cpus,
        gpus=int(gpus or 0),
        gpu_model=gpu.model if gpu else None,
        disk_mb=max(1, int(disk_gb * 1024)) if disk_gb else DEFAULT_DISK_MB,
    )

"""What `labcoat check` needs to know of a METR task family's task."""

from __future__ import annotations

from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.rebench._family import TaskFamilyDir


def preflight(entry: TaskEntry) -> Preflight:
    family = TaskFamilyDir(entry.path)
    task = entry.id.split("/", 1)[1]
    spec = family.sidecar.tasks.get(task) if family.sidecar else None
    return Preflight(environments=[family.environment], gpus=spec.resources.gpus if spec else 0)

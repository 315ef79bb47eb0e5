"""What `labcoat check` needs to know of a METR task family's task."""

from __future__ import annotations

from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.rebench._family import TaskFamilyDir
from labcoat.families.rebench._resources import task_resources
from labcoat.families.rebench._secrets import secret_values


def preflight(entry: TaskEntry) -> Preflight:
    family = TaskFamilyDir(entry.path)
    task = entry.id.split("/", 1)[1]
    found, missing = secret_values(family.declared_secrets)
    problems = []
    if missing:
        problems.append(
            f"secrets: {family.name} needs these environment variables, which are not set: "
            f"{', '.join(missing)} (set them in the environment or pass --secrets FILE)"
        )
    image = family.image(found) if not missing else None
    return Preflight(
        environments=[family.environment],
        images=[image] if image is not None else [],
        gpus=task_resources(family, task).gpus,
        gpu_model=task_resources(family, task).gpu_model,
        problems=problems,
    )

"""What a sample's metadata says about its task (written when the dataset is built).

The metadata carries only what the agent may know: sub-task ids, metrics and baselines,
never SOTA values. Graders and scorers read those from the protected sidecar.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labcoat.families.researchgym._folder import TaskFolder
from labcoat.families.researchgym._sidecar import SIDECAR

KEY = "researchgym"


def sidecar_used(folder: TaskFolder) -> dict[str, Any] | None:
    """`{path, overlay}` of the sidecar that configures the sample (the folder's own
    `labcoat.yaml`, else labcoat's overlay that matched), None when none does: what the
    score's provenance hashes, so that it never has to guess which file applied."""
    origin = folder.sidecar_origin
    if origin is None:
        return None
    if origin == SIDECAR:
        return {"path": str(folder.path / SIDECAR), "overlay": False}
    file = folder.overlay.file  # set whenever the origin is an overlay
    return {"path": str(file), "overlay": True} if file is not None else None


@dataclass(frozen=True)
class SampleInfo:
    folder: TaskFolder
    workdir: str
    memory_mb: int
    install: bool
    idea_hint: bool
    network: bool

    @classmethod
    def of(cls, metadata: dict[str, Any]) -> SampleInfo:
        m = metadata[KEY]
        return cls(
            folder=TaskFolder(Path(m["task_dir"])),
            workdir=m["workdir"],
            memory_mb=m["memory_mb"],
            install=m["install"],
            idea_hint=m["idea_hint"],
            network=m["network"],
        )

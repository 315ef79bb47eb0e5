"""`manifest.yaml` of a METR task family: its version and each task's resources and scoring.

The task standard's manifest is open-ended (`meta`, descriptions, canaries, ...); labcoat
reads the parts that change how a task runs and checks their types, and leaves the rest
alone, so any manifest METR's tooling accepts loads here.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labcoat._util.yaml_file import load_model

MANIFEST = "manifest.yaml"


class _Open(BaseModel):
    """Keys labcoat does not use are allowed (the standard's manifests carry many)."""

    model_config = ConfigDict(extra="allow", frozen=True)


class GpuSpec(_Open):
    count_range: tuple[int, int]
    model: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> GpuSpec:
        low, high = self.count_range
        if low < 0 or high < low:
            raise ValueError(f"count_range {list(self.count_range)} is not [min, max]")
        return self


class ManifestResources(_Open):
    cpus: float | None = Field(default=None, gt=0)
    memory_gb: float | None = Field(default=None, gt=0)
    storage_gb: float | None = Field(default=None, gt=0)
    gpu: GpuSpec | None = None


class ManifestScoring(_Open):
    visible_to_agent: bool = False
    """METR's runner returns intermediate scores to the agent only when this is true."""
    score_on_usage_limits: bool | None = None
    instructions: str | None = None


class ManifestTask(_Open):
    resources: ManifestResources = ManifestResources()
    scoring: ManifestScoring = ManifestScoring()
    version: str | int | float | None = None


class Manifest(_Open):
    version: str | int | float | None = None
    """The family's version (`version: 1.0` in YAML is a number: read as text)."""
    tasks: dict[str, ManifestTask] = Field(default_factory=dict)

    def task(self, name: str) -> ManifestTask:
        return self.tasks.get(name) or ManifestTask()


def load_manifest(family_dir: Path) -> Manifest | None:
    """The family's manifest.yaml; a wrong type names the file and the field."""
    path = family_dir / MANIFEST
    if not path.exists():
        return None
    manifest = load_model(Manifest, path)
    if manifest.version is not None:
        manifest = manifest.model_copy(update={"version": str(manifest.version)})
    return manifest

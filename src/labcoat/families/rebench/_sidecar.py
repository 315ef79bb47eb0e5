"""`labcoat.yaml` beside a METR task family: what RE-Bench adds to the task standard."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from labcoat._errors import TaskDataError
from labcoat._util.yaml_file import load_model
from labcoat.families._entry import ValidationThresholds
from labcoat.families._sidecar_parts import (
    KeepWorkspace,
    Resources,
    StrictModel,
    ValidationSpec,
)

SIDECAR = "labcoat.yaml"


class ScoreSpec(StrictModel):
    start: float
    """Raw score of the starting solution, measured (normalized 0)."""
    reference: float
    """Raw score of the reference solution, measured (normalized 1)."""
    higher_is_better: bool
    final: Literal["best", "last"] = "best"
    """Final raw score: the best intermediate score of the run, or the last one."""

    @model_validator(mode="after")
    def _consistent(self) -> ScoreSpec:
        if not all(math.isfinite(v) for v in (self.start, self.reference)):
            raise ValueError("start and reference must be finite numbers")
        if self.start == self.reference:
            raise ValueError("start and reference are equal: nothing to normalize against")
        if (self.reference > self.start) != self.higher_is_better:
            raise ValueError(
                f"higher_is_better is {self.higher_is_better} but reference "
                f"({self.reference}) is {'below' if self.higher_is_better else 'above'} "
                f"start ({self.start})"
            )
        return self


class OracleSpec(StrictModel):
    files: str | None = None
    """Folder inside the family whose tree is written over /home/agent."""
    run: str | None = None
    """Shell command run in the agent's sandbox after the files are written."""
    submission: str = ""


class TaskSpec(StrictModel):
    title: str
    score: ScoreSpec
    time_limit_minutes: float = Field(default=30, gt=0)
    resources: Resources = Resources()
    oracle: OracleSpec = OracleSpec()
    validation: ValidationSpec = ValidationSpec()
    timing_sensitive: bool = False
    """Scores measure speed: scoring waits for exclusive use of the machine."""
    keep_workspace: KeepWorkspace = KeepWorkspace()
    """What of /home/agent is not kept for `labcoat regrade`."""
    scoring_timeout_minutes: float | None = Field(default=None, gt=0)
    """How long one task operation (start, a score, teardown) may take; a score that
    takes longer counts as broken scoring (default: LABCOAT_TASK_OPERATION_TIMEOUT, 1 h)."""

    @property
    def thresholds(self) -> ValidationThresholds:
        return self.validation.thresholds


class Sidecar(StrictModel):
    requirements: tuple[str, ...] = ()
    """Python packages the family's code and the agent's environment need."""
    tasks: dict[str, TaskSpec]


def load_sidecar(family_dir: Path) -> Sidecar | None:
    path = family_dir / SIDECAR
    if not path.exists():
        return None
    sidecar = load_model(Sidecar, path)
    if not sidecar.tasks:
        raise TaskDataError(path, "tasks", "declares no tasks")
    for name, spec in sidecar.tasks.items():
        files = spec.oracle.files
        if files and not (family_dir / files).is_dir():
            raise TaskDataError(
                path, f"tasks.{name}.oracle.files", f"no folder {files!r} in {family_dir}"
            )
    return sidecar

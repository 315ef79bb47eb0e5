"""Per-paper run settings: the optional `task:` section of a paper's `labcoat.yaml`.

```yaml
task:
  time_limit_minutes: 60           # the agent's budget
  reproduce_timeout_minutes: 10    # reproduce.sh's time limit
  requirements: [numpy]            # Python packages in the agent's and the graders' sandboxes
  memory_gb: 4
  reproduce_gpus: 1                # GPUs of the reproduction's sandbox (a Ray run places it)
  keep_workspace:                  # not kept for `labcoat regrade` (docs/regrade.md)
    exclude: [checkpoints]
```

Every field is optional; the task's arguments override them, and labcoat's defaults fill the
rest. Upstream papers have no sidecar, so they run on the defaults.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labcoat._errors import TaskDataError
from labcoat._util.yaml_file import read_yaml
from labcoat.families._sidecar_parts import KeepWorkspace
from labcoat.families.paperbench._paper import Paper

# PaperBench gives agents 12 hours; the reproduction limit is labcoat's default.
DEFAULT_TIME_LIMIT_MINUTES = 12 * 60
DEFAULT_REPRODUCE_TIMEOUT_MINUTES = 12 * 60
DEFAULT_REQUIREMENTS = ("numpy",)
DEFAULT_MEMORY_GB = 4.0


class PaperSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    time_limit_minutes: float | None = Field(default=None, gt=0)
    reproduce_timeout_minutes: float | None = Field(default=None, gt=0)
    requirements: tuple[str, ...] | None = None
    memory_gb: float | None = Field(default=None, gt=0)
    reproduce_gpus: int | None = Field(default=None, ge=0)
    keep_workspace: KeepWorkspace = KeepWorkspace()


def load_settings(paper: Paper) -> PaperSettings:
    """The paper's `task:` settings; all None when it has no sidecar or no such section."""
    file = paper.sidecar_path
    if file is None:
        return PaperSettings()
    data: Any = read_yaml(file)
    section = data.get("task") if isinstance(data, dict) else None
    if section is None:
        return PaperSettings()
    try:
        return PaperSettings.model_validate(section)
    except ValidationError as ex:
        first = ex.errors()[0]
        where = ".".join(str(p) for p in ("task", *first["loc"]))
        raise TaskDataError(file, where, first["msg"]) from None

"""Pieces that every family's `labcoat.yaml` sidecar shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labcoat.families._entry import DEFAULT_NOOP_MAX, DEFAULT_ORACLE_MIN, ValidationThresholds


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in a sidecar must not pass silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Resources(StrictModel):
    cpus: float = Field(default=1, gt=0)
    memory_gb: float = Field(default=4, gt=0)
    gpus: int = Field(default=0, ge=0)
    disk_gb: float = Field(default=16, gt=0)
    """Quota on everything the agent can write (workspace, /tmp, home) together."""

    @property
    def disk_mb(self) -> int:
        return max(1, int(self.disk_gb * 1024))


class KeepWorkspace(StrictModel):
    """What of the final workspace is not kept for `labcoat regrade` (docs/regrade.md),
    beyond labcoat's defaults (`__pycache__`, `.venv`, `*.pyc`): globs; one without `/`
    matches a file or folder of that name anywhere, one with `/` a path from the root."""

    exclude: tuple[str, ...] = ()

    def to_metadata(self) -> dict[str, list[str]]:
        return {"exclude": list(self.exclude)}


class ValidationSpec(StrictModel):
    """`labcoat validate`'s pass rule for a task; looser than the default needs a reason."""

    oracle_min: float = DEFAULT_ORACLE_MIN
    noop_max: float = DEFAULT_NOOP_MAX
    reason: str | None = None

    @model_validator(mode="after")
    def _reason_for_loosening(self) -> ValidationSpec:
        loosened = self.oracle_min < DEFAULT_ORACLE_MIN or self.noop_max > DEFAULT_NOOP_MAX
        if loosened and not self.reason:
            raise ValueError("thresholds looser than the defaults need a `reason`")
        return self

    @property
    def thresholds(self) -> ValidationThresholds:
        return ValidationThresholds(self.oracle_min, self.noop_max, self.reason)

"""Sidecars that labcoat ships for upstream ResearchGym task folders (overlays).

Upstream's task folders declare no sub-tasks. Rather than asking users to edit them,
labcoat carries one overlay per task folder of upstream's test split, in
`overlays/<task>.yaml`: a sidecar (the same fields as `labcoat.yaml`) plus the identity of
the folder it was written for, its name and the SHA-256 of its task_description.md. An
overlay applies only when both match, so a changed description (other tables, other
baselines) is never graded with stale declarations: it is reported instead.

A `labcoat.yaml` inside the folder always wins over an overlay.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import Field, field_validator

from labcoat._errors import TaskDataError
from labcoat._util.yaml_file import load_model
from labcoat.families._sidecar_parts import StrictModel
from labcoat.families.researchgym._sidecar import Sidecar, validate_sidecar

OVERLAY_DIR = Path(__file__).with_name("overlays")


class Identity(StrictModel):
    name: str
    """The task folder's name."""
    description_sha256: tuple[str, ...] = Field(min_length=1)
    """SHA-256 of the task_description.md versions the overlay was written for (text with
    `\\r\\n` read as `\\n`)."""
    source: str | None = None
    """Where that folder comes from (repository, path, commit)."""

    @field_validator("description_sha256")
    @classmethod
    def _hex(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
                raise ValueError(f"{value!r} is not a lower-case SHA-256 hex digest")
        return values


class Overlay(Sidecar):
    identity: Identity

    def sidecar(self) -> Sidecar:
        return Sidecar.model_validate(self.model_dump(exclude={"identity"}, by_alias=True))


def description_digest(text: str) -> str:
    return hashlib.sha256(text.replace("\r\n", "\n").encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class OverlayMatch:
    overlay: Overlay | None
    """The overlay that applies, if any."""
    file: Path | None
    """The overlay's file (also when it does not apply)."""
    mismatch: str | None = None
    """Why an overlay written for a folder of this name does not apply."""


@cache
def shipped_overlays(directory: Path = OVERLAY_DIR) -> dict[str, tuple[Path, Overlay]]:
    """Task name -> (file, overlay) for every overlay labcoat ships."""
    overlays: dict[str, tuple[Path, Overlay]] = {}
    for path in sorted(directory.glob("*.yaml")):
        overlay = load_model(Overlay, path)
        validate_sidecar(overlay, path)
        name = overlay.identity.name
        if name in overlays:
            raise TaskDataError(path, "identity.name", f"{name!r} has two overlays")
        overlays[name] = (path, overlay)
    return overlays


def match_overlay(task_dir: Path, description: str) -> OverlayMatch:
    found = shipped_overlays().get(task_dir.name)
    if found is None:
        return OverlayMatch(None, None)
    path, overlay = found
    digest = description_digest(description)
    if digest in overlay.identity.description_sha256:
        return OverlayMatch(overlay, path)
    return OverlayMatch(
        None,
        path,
        f"labcoat's overlay for {task_dir.name} ({path.name}) does not apply: "
        f"task_description.md differs from the version it was written for "
        f"(sha256 {digest[:12]}…)",
    )

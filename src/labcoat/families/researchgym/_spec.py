"""ResearchGym as shared code sees it (`labcoat.families._spec`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labcoat.families._provenance_parts import file_part, sidecar_part, used_sidecar_part
from labcoat.families._spec import EvalChoices, FamilyProvenance, FamilySpec, Metadata
from labcoat.families.researchgym._preflight import preflight
from labcoat.families.researchgym._task import FAMILY, discover, researchgym

OVERLAYS = Path(__file__).resolve().parent / "overlays"


def task_folder(meta: Metadata) -> Path:
    return Path(meta[FAMILY]["task_dir"])


def provenance(meta: Metadata, scored: Metadata) -> FamilyProvenance:
    m = meta.get(FAMILY) or {}
    folder = Path(m["task_dir"])
    if "sidecar" in m:  # the file the task was built with, or none
        sidecar = used_sidecar_part(m["sidecar"])
    else:  # a sample built before it was named: the folder's own, else the overlay
        overlay = OVERLAYS / f"{folder.name}.yaml"
        sidecar = sidecar_part(folder) or file_part(overlay, f"overlay {overlay.name}")
    limits = {k: m.get(k) for k in ("memory_mb", "network")}
    return FamilyProvenance(inputs={"sidecar": sidecar}, limits=limits)


def eval_args(choices: EvalChoices, given: dict[str, Any]) -> dict[str, Any]:
    return {**given, "idea_hint": True} if choices.idea_hint else given


SPEC = FamilySpec(
    name=FAMILY,
    title="ResearchGym",
    code=Path(__file__).resolve().parent,
    discover=discover,
    task=researchgym,
    task_folder=task_folder,
    report_rank=1,
    provenance=provenance,
    preflight=preflight,
    eval_args=eval_args,
    report_sections=("subtasks",),
)

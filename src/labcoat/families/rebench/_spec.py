"""RE-Bench as shared code sees it (`labcoat.families._spec`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labcoat.families._provenance_parts import sidecar_part
from labcoat.families._spec import (
    EvalChoices,
    FamilyProvenance,
    FamilySpec,
    Metadata,
    timed_at_top_level,
)
from labcoat.families.rebench._preflight import preflight
from labcoat.families.rebench._task import FAMILY, discover, rebench

LIMITS = ("memory_mb", "cpus", "gpus", "gpu_model", "timeout", "network")


def task_folder(meta: Metadata) -> Path:
    return Path(meta[FAMILY]["family_dir"])


def provenance(meta: Metadata, scored: Metadata) -> FamilyProvenance:
    m = meta.get(FAMILY) or {}
    folder = Path(m["family_dir"])
    # METR's own version of the task family, as its bridge records it
    inputs = {"sidecar": sidecar_part(folder), "task_version": meta.get("task_version")}
    return FamilyProvenance(inputs=inputs, limits={k: m.get(k) for k in LIMITS})


def timed(meta: Metadata) -> bool:
    # RE-Bench keeps the flag in its own metadata; a top-level one counts too
    nested = meta.get(FAMILY)
    return timed_at_top_level(meta) or bool(
        isinstance(nested, dict) and nested.get("timing_sensitive")
    )


def eval_args(choices: EvalChoices, given: dict[str, Any]) -> dict[str, Any]:
    # the secrets file, read again where the sample is scored (a Ray node too)
    return {**given, "secrets": choices.secrets_file} if choices.secrets_file else given


SPEC = FamilySpec(
    name=FAMILY,
    title="RE-Bench",
    code=Path(__file__).resolve().parent,
    discover=discover,
    discover_by_ids=True,
    task=rebench,
    task_folder=task_folder,
    report_rank=0,
    provenance=provenance,
    preflight=preflight,
    eval_args=eval_args,
    timed=timed,
)

"""PaperBench as shared code sees it (`labcoat.families._spec`)."""

from __future__ import annotations

from pathlib import Path

from labcoat.families._provenance_parts import guarded, judge_part, sidecar_part
from labcoat.families._spec import FamilyProvenance, FamilySpec, Metadata
from labcoat.families.paperbench._papers import FAMILY, discover, select_entries
from labcoat.families.paperbench._preflight import preflight
from labcoat.families.paperbench._task import paperbench

LIMITS = ("reproduce_timeout_minutes", "reproduce_retries", "memory_mb", "reproduce_gpus")


def task_folder(meta: Metadata) -> Path:
    return Path(meta[FAMILY]["paper_dir"])


def provenance(meta: Metadata, scored: Metadata) -> FamilyProvenance:
    m = meta.get(FAMILY) or {}
    folder = Path(m["paper_dir"])
    limits = {k: m.get(k) for k in (*LIMITS, "network")}
    inputs = {"sidecar": sidecar_part(folder), "judge": guarded(lambda: judge_part(m, scored))}
    return FamilyProvenance(inputs=inputs, limits=limits)


SPEC = FamilySpec(
    name=FAMILY,
    title="PaperBench",
    code=Path(__file__).resolve().parent,
    discover=discover,
    task=paperbench,
    task_folder=task_folder,
    report_rank=2,
    provenance=provenance,
    preflight=preflight,
    select_entries=select_entries,
    report_sections=("rubric_categories",),
)

"""Pieces of a family's provenance inputs that families share: a hashed file, the task
folder's sidecar, the judge a score reports. Each family's `FamilySpec.provenance`
builds its part of the record (`_provenance`) from these."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from labcoat.families._provenance_hash import file_hash

SIDECAR = "labcoat.yaml"
JUDGE_INFO = "judge_info"
"""Score metadata (PaperBench): the judge that graded, as `JudgeResult.identity()`."""

Part = dict[str, Any]


def guarded(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except Exception as ex:  # provenance is a record, never a reason to lose a score
        return {"error": f"{type(ex).__name__}: {ex}"[:300]}


def file_part(path: Path, label: str | None = None) -> Part | None:
    if not path.is_file():
        return None
    return {"file": label or path.name, "hash": file_hash(str(path))}


def sidecar_part(folder: Path) -> Part | None:
    return file_part(folder / SIDECAR)


def used_sidecar_part(used: dict[str, Any] | None) -> Part | None:
    """The sidecar a sample names (`{path, overlay}`), hashed; None: none."""
    if not used:
        return None
    path = Path(used["path"])
    label = f"overlay {path.name}" if used.get("overlay") else path.name
    part = file_part(path, label) or {"file": label, "hash": None, "missing": True}
    return {**part, "path": str(path), "overlay": bool(used.get("overlay"))}


def judge_part(m: dict[str, Any], scored: dict[str, Any]) -> Part:
    """The judge as the scorer reports it: the model it called, not the one it was
    named by (the `grader` role resolves per run); the check judge has none."""
    info = scored.get(JUDGE_INFO)
    if not isinstance(info, dict):  # a scorer that did not say: the task's options
        return {"name": m.get("judge"), "model": m.get("judge_model"), "prompt": None}
    return {
        "name": info.get("name"),
        "model": info.get("model"),
        # the check judge's "prompt" is the sidecar's checks: its hash is the sidecar's
        "prompt": info.get("prompt_hash"),
        "prompt_version": info.get("prompt_version"),
    }

"""Provenance on every score: what a sample was graded with and ran under.

`research_score` adds `provenance_record()` to every family's score metadata (key
`provenance`), beside `sandbox` (the isolation mode and its limits' mechanisms), so a
table can tell runs of different task contents, graders, judges or machines apart:

- `labcoat`: version, and git commit (+ dirty) when run from a checkout;
- `inspect_ai`: Inspect's version;
- `task`: the task folder's content hash (`_provenance_hash`), files and bytes;
- `grader`: the grader version `labcoat regrade` records (labcoat's version and a hash
  of the grading code);
- `inputs`: family-specific inputs: the sidecar's hash (the overlay's, where labcoat's
  applies), RE-Bench's task family version, ResearchCodeBench's pset index and Python
  environment, PaperBench's judge (name, model, prompt hash);
- `model`: the eval's model and the model the provider reported for the last output;
- `hardware`: CPU model, cores, memory, GPUs, driver;
- `limits`: Inspect's sample limits, the task's own budgets, the sandbox's limits.

The families are read here, from the sample metadata their tasks already write, so a
family's package needs nothing new to be recorded. Nothing here may fail a score: a
part that cannot be read is recorded as `{"error": ...}`.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labcoat.families._provenance_hash import file_hash, folder_hash, json_hash, top_files_hash
from labcoat.families._provenance_host import hardware, labcoat_build
from labcoat.sandbox import current_bwrap_session

PROVENANCE = "provenance"
"""Score metadata: the record this module makes."""

FAMILIES = Path(__file__).resolve().parent
SIDECAR = "labcoat.yaml"
RESEARCHGYM_OVERLAYS = FAMILIES / "researchgym" / "overlays"
LLM_PROMPTS = FAMILIES / "paperbench" / "_llm_prompts.py"
"""The `llm` judge's prompts: their file's hash names the prompt version."""

SANDBOX_LIMITS = (
    "memory_mb",
    "cpus",
    "pids",
    "file_size_mb",
    "disk_mb",
    "command_timeout",
    "gpus",
    "network",
)
SAMPLE_LIMITS = ("time", "working", "token", "message", "cost", "turn")

Part = dict[str, Any]


def _guarded(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except Exception as ex:  # provenance is a record, never a reason to lose a score
        return {"error": f"{type(ex).__name__}: {ex}"[:300]}


@functools.cache
def _inspect_version() -> str | None:
    try:
        return importlib.metadata.version("inspect_ai")
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _grader(family: str) -> dict[str, str]:
    # imported here: `labcoat.regrade` runs families' tasks, and its package imports them
    from labcoat.regrade._grader import grader_version

    return grader_version(family)


def _file(path: Path, label: str | None = None) -> Part | None:
    if not path.is_file():
        return None
    return {"file": label or path.name, "hash": file_hash(str(path))}


def _sidecar(folder: Path) -> Part | None:
    return _file(folder / SIDECAR)


def _researchgym(meta: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("researchgym") or {}
    folder = Path(m["task_dir"])
    # a labcoat.yaml in the folder wins; else labcoat's overlay for a folder of this name
    overlay = RESEARCHGYM_OVERLAYS / f"{folder.name}.yaml"
    sidecar = _sidecar(folder) or _file(overlay, f"overlay {overlay.name}")
    limits = {k: m.get(k) for k in ("memory_mb", "network")}
    return folder, {"sidecar": sidecar}, limits


def _rebench(meta: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("rebench") or {}
    folder = Path(m["family_dir"])
    keys = ("memory_mb", "cpus", "gpus", "gpu_model", "timeout", "network")
    # METR's own version of the task family, as its bridge records it
    inputs = {"sidecar": _sidecar(folder), "task_version": meta.get("task_version")}
    return folder, inputs, {k: m.get(k) for k in keys}


def _judge_model(m: dict[str, Any]) -> str | None:
    if m.get("judge_model"):
        return str(m["judge_model"])
    if m.get("judge") != "llm":
        return None
    from inspect_ai.model import get_model

    # the judge's own rule: Inspect's `grader` role, else the eval's model
    return str(get_model(role="grader"))


def _paperbench(meta: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("paperbench") or {}
    folder = Path(m["paper_dir"])
    judge = {
        "name": m.get("judge"),
        "model": _guarded(lambda: _judge_model(m)),
        # the check judge's "prompt" is the sidecar's checks: its hash is the sidecar's
        "prompt": file_hash(str(LLM_PROMPTS)) if m.get("judge") == "llm" else None,
    }
    keys = ("reproduce_timeout_minutes", "reproduce_retries", "memory_mb", "reproduce_gpus")
    limits = {k: m.get(k) for k in (*keys, "network")}
    return folder, {"sidecar": _sidecar(folder), "judge": judge}, limits


def _researchcodebench(meta: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("researchcodebench") or {}
    pset = Path(m["pset"])
    inputs = {
        "pset": {"file": "papers.yaml and its neighbours", "hash": top_files_hash(str(pset))},
        # the Python environment the paper's tests ran in, as resolved on this machine
        "environment": {"hash": json_hash(m.get("environment"))},
    }
    return pset / str(m["paper"]), inputs, {k: m.get(k) for k in ("timeout", "mode")}


FAMILY_INPUTS: dict[str, Callable[[dict[str, Any]], tuple[Path, Part, Part]]] = {
    "researchgym": _researchgym,
    "rebench": _rebench,
    "paperbench": _paperbench,
    "researchcodebench": _researchcodebench,
}
"""Per family: (task folder, family inputs, the family's own limits) from sample metadata."""


def _sample_limits() -> Part:
    from inspect_ai.util import sample_limits

    limits = sample_limits()
    return {k: node.limit for k in SAMPLE_LIMITS if (node := getattr(limits, k, None)) is not None}


def _sandbox_limits() -> Part | None:
    session = current_bwrap_session()
    if session is None:
        return None
    return {k: getattr(session.config, k, None) for k in SANDBOX_LIMITS}


def _model(state: Any) -> Part:
    reported = state.output.model if state is not None and state.output else None
    return {"eval": str(state.model) if state is not None else None, "reported": reported or None}


def _task(folder: Path) -> Part:
    return {"folder": str(folder), **folder_hash(str(folder)).to_json()}


def provenance_record() -> dict[str, Any]:
    """The current sample's provenance (see the module's docstring)."""
    from inspect_ai.solver._task_state import sample_state

    state = sample_state()
    meta = dict(state.metadata or {}) if state is not None else {}
    family = str(meta.get("family") or "")
    reader = FAMILY_INPUTS.get(family)
    found = _guarded(lambda: reader(meta)) if reader else None
    folder, inputs, family_limits = found if isinstance(found, tuple) else (None, found, None)
    task_limits = {
        "time_limit_minutes": meta.get("time_limit_minutes"),
        "resources": meta.get("resources"),
        **(family_limits or {}),
    }
    return {
        "labcoat": _guarded(labcoat_build),
        "inspect_ai": _inspect_version(),
        "family": family or None,
        "task": _guarded(lambda: _task(folder)) if folder is not None else None,
        "grader": _guarded(lambda: _grader(family)) if reader else None,
        "inputs": inputs,
        "model": _guarded(lambda: _model(state)),
        "hardware": _guarded(hardware),
        "limits": {
            "sample": _guarded(_sample_limits),
            "task": task_limits,
            "sandbox": _guarded(_sandbox_limits),
        },
    }

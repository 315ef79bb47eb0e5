"""Provenance on every score: what a sample was graded with and ran under.

`research_score` adds `provenance_record()` to every family's score metadata (key
`provenance`), beside `sandbox` (the isolation mode and its limits' mechanisms), so a
table can tell runs of different task contents, graders, judges or machines apart:

- `labcoat`: version, and git commit (+ dirty) when run from a checkout;
- `inspect_ai`: Inspect's version;
- `task`: the task folder's content hash (`_provenance_hash`), files and bytes;
- `grader`: the grader version `labcoat regrade` records (labcoat's version and a hash
  of the grading code);
- `inputs`: family-specific inputs: the sidecar's hash (the file the task used: ResearchGym
  names it, labcoat's overlay or the folder's own), RE-Bench's task family version,
  ResearchCodeBench's pset index and Python environment, PaperBench's judge (name, the
  model it called, its prompts' version and hash, from the score's `judge_info`);
- `model`: the eval's model, the model the provider reported for the last output, and
  every model it reported over the sample's calls, with counts (the agent's; the
  grading's apart);
- `hardware`: CPU model, cores, memory, GPUs, driver;
- `limits`: Inspect's sample limits, the research agent's own budget, the task's own
  budgets, the sample's sandbox limits, and ResearchCodeBench's grader sandboxes'.

The families are read here, from the sample metadata their tasks write and the score
metadata their scorers return. Nothing here may fail a score: a part that cannot be
read is recorded as `{"error": ...}`.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labcoat.families._provenance_hash import (
    file_hash,
    folder_hash,
    folder_hash_soon,
    json_hash,
    top_files_hash,
)
from labcoat.families._provenance_host import hardware, labcoat_build
from labcoat.families._provenance_run import (
    agent_budget,
    reported_models,
    researchcodebench_grader,
    sample_events,
)
from labcoat.sandbox import current_bwrap_session

PROVENANCE = "provenance"
"""Score metadata: the record this module makes."""
JUDGE_INFO = "judge_info"
"""Score metadata (PaperBench): the judge that graded, as `JudgeResult.identity()`."""

FAMILIES = Path(__file__).resolve().parent
SIDECAR = "labcoat.yaml"
RESEARCHGYM_OVERLAYS = FAMILIES / "researchgym" / "overlays"

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


def _used_sidecar(used: dict[str, Any] | None) -> Part | None:
    """The sidecar a ResearchGym sample names (`{path, overlay}`), hashed; None: none."""
    if not used:
        return None
    path = Path(used["path"])
    label = f"overlay {path.name}" if used.get("overlay") else path.name
    part = _file(path, label) or {"file": label, "hash": None, "missing": True}
    return {**part, "path": str(path), "overlay": bool(used.get("overlay"))}


def _researchgym(meta: dict[str, Any], scored: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("researchgym") or {}
    folder = Path(m["task_dir"])
    if "sidecar" in m:  # the file the task was built with, or none
        sidecar = _used_sidecar(m["sidecar"])
    else:  # a sample built before it was named: the folder's own, else the overlay
        overlay = RESEARCHGYM_OVERLAYS / f"{folder.name}.yaml"
        sidecar = _sidecar(folder) or _file(overlay, f"overlay {overlay.name}")
    limits = {k: m.get(k) for k in ("memory_mb", "network")}
    return folder, {"sidecar": sidecar}, limits


def _rebench(meta: dict[str, Any], scored: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("rebench") or {}
    folder = Path(m["family_dir"])
    keys = ("memory_mb", "cpus", "gpus", "gpu_model", "timeout", "network")
    # METR's own version of the task family, as its bridge records it
    inputs = {"sidecar": _sidecar(folder), "task_version": meta.get("task_version")}
    return folder, inputs, {k: m.get(k) for k in keys}


def _judge(m: dict[str, Any], scored: dict[str, Any]) -> Part:
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


def _paperbench(meta: dict[str, Any], scored: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("paperbench") or {}
    folder = Path(m["paper_dir"])
    keys = ("reproduce_timeout_minutes", "reproduce_retries", "memory_mb", "reproduce_gpus")
    limits = {k: m.get(k) for k in (*keys, "network")}
    inputs = {"sidecar": _sidecar(folder), "judge": _guarded(lambda: _judge(m, scored))}
    return folder, inputs, limits


def _researchcodebench(meta: dict[str, Any], scored: dict[str, Any]) -> tuple[Path, Part, Part]:
    m = meta.get("researchcodebench") or {}
    pset = Path(m["pset"])
    inputs = {
        "pset": {"file": "papers.yaml and its neighbours", "hash": top_files_hash(str(pset))},
        # the Python environment the paper's tests ran in, as resolved on this machine
        "environment": {"hash": json_hash(m.get("environment"))},
    }
    return pset / str(m["paper"]), inputs, {k: m.get(k) for k in ("timeout", "mode")}


Reader = Callable[[dict[str, Any], dict[str, Any]], tuple[Path, Part, Part]]

FAMILY_INPUTS: dict[str, Reader] = {
    "researchgym": _researchgym,
    "rebench": _rebench,
    "paperbench": _paperbench,
    "researchcodebench": _researchcodebench,
}
"""Per family: (task folder, family inputs, the family's own limits) from the sample's
metadata and the score's."""

TASK_FOLDERS: dict[str, Callable[[dict[str, Any]], Path]] = {
    "researchgym": lambda meta: Path(meta["researchgym"]["task_dir"]),
    "rebench": lambda meta: Path(meta["rebench"]["family_dir"]),
    "paperbench": lambda meta: Path(meta["paperbench"]["paper_dir"]),
    "researchcodebench": lambda m: (
        Path(m["researchcodebench"]["pset"]) / str(m["researchcodebench"]["paper"])
    ),
}
"""Per family: the task folder whose content hash the score records."""


def provenance_prefetch(metadata: dict[str, Any]) -> None:
    """Start hashing the sample's task folder in the background (at the sample's start):
    gigabytes take seconds, which its score would otherwise spend on the event loop."""
    folder = TASK_FOLDERS.get(str(metadata.get("family") or ""))
    try:
        if folder is not None:
            folder_hash_soon(str(folder(metadata)))
    except Exception:  # a record's optimisation: the score computes it if this cannot
        pass


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
    record: Part = {
        "eval": str(state.model) if state is not None else None,
        "reported": reported or None,
    }
    if state is not None:  # apart: a transcript that cannot be read loses only these
        counted = _guarded(lambda: reported_models(sample_events()))
        calls, scoring = counted if isinstance(counted, tuple) else (counted, counted)
        record |= {"calls": calls, "scoring_calls": scoring}
    return record


def _grader_limits(family: str, meta: dict[str, Any]) -> Part | None:
    """Grader sandboxes' limits, for a family whose sample has no sandbox of its own."""
    if family != "researchcodebench":
        return None
    return researchcodebench_grader((meta.get("researchcodebench") or {}).get("timeout"))


def _task(folder: Path) -> Part:
    return {"folder": str(folder), **folder_hash(str(folder)).to_json()}


def provenance_record(scored: dict[str, Any] | None = None) -> dict[str, Any]:
    """The current sample's provenance (see the module's docstring); `scored` is the
    score's own metadata (what the scorer reports of its grading: the judge)."""
    from inspect_ai.solver._task_state import sample_state

    state = sample_state()
    meta = dict(state.metadata or {}) if state is not None else {}
    score_meta = dict(scored or {})
    family = str(meta.get("family") or "")
    reader = FAMILY_INPUTS.get(family)
    found = _guarded(lambda: reader(meta, score_meta)) if reader else None
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
            # the research agent's own limits (None: an agent that applies none)
            "agent": _guarded(agent_budget) if state is not None else None,
            "task": task_limits,
            "sandbox": _guarded(_sandbox_limits),
            "grader": _guarded(lambda: _grader_limits(family, meta)),
        },
    }

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

What is the family's own (its task folder, inputs and limits) each family's spec says
(`FamilySpec.task_folder`, `.provenance`, `.grader_limits`), from the sample metadata
its task writes and the score metadata its scorer returns: nothing here names a family.
Nothing here may fail a score: a part that cannot be read is recorded as
`{"error": ...}`.
"""

from __future__ import annotations

import functools
import importlib.metadata
from pathlib import Path
from typing import Any

from labcoat.families._provenance_hash import folder_hash, folder_hash_soon
from labcoat.families._provenance_host import hardware, labcoat_build
from labcoat.families._provenance_parts import JUDGE_INFO, Part, guarded
from labcoat.families._provenance_run import agent_budget, reported_models, sample_events
from labcoat.families._registry import family_spec, is_family
from labcoat.families._spec import FamilyProvenance, FamilySpec
from labcoat.grading import grader_version
from labcoat.sandbox import current_bwrap_session

PROVENANCE = "provenance"
"""Score metadata: the record this module makes."""

__all__ = ["JUDGE_INFO", "PROVENANCE", "provenance_prefetch", "provenance_record"]

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


@functools.cache
def _inspect_version() -> str | None:
    try:
        return importlib.metadata.version("inspect_ai")
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _grader(family: str) -> dict[str, str]:
    return grader_version(family_spec(family).code)


def _spec_of(meta: dict[str, Any]) -> FamilySpec | None:
    """The spec of the family the sample names; None: none, or one not registered."""
    family = str(meta.get("family") or "")
    return family_spec(family) if is_family(family) else None


def provenance_prefetch(metadata: dict[str, Any]) -> None:
    """Start hashing the sample's task folder in the background (at the sample's start):
    gigabytes take seconds, which its score would otherwise spend on the event loop."""
    try:
        spec = _spec_of(metadata)
        if spec is not None:
            folder_hash_soon(str(spec.task_folder(metadata)))
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
        counted = guarded(lambda: reported_models(sample_events()))
        calls, scoring = counted if isinstance(counted, tuple) else (counted, counted)
        record |= {"calls": calls, "scoring_calls": scoring}
    return record


def _grader_limits(spec: FamilySpec, meta: dict[str, Any]) -> Part | None:
    """Grader sandboxes' limits, for a family whose sample has no sandbox of its own."""
    return spec.grader_limits(meta) if spec.grader_limits is not None else None


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
    spec = guarded(lambda: _spec_of(meta))
    spec = spec if isinstance(spec, FamilySpec) else None
    folder = guarded(lambda: spec.task_folder(meta)) if spec else None
    folder = folder if isinstance(folder, Path) else None
    found = guarded(lambda: spec.provenance(meta, score_meta)) if spec else None
    inputs: Any
    family_limits: dict[str, Any] | None
    if isinstance(found, FamilyProvenance):
        inputs, family_limits = found.inputs, found.limits
    else:  # no family, or its reader failed (`{"error": ...}`)
        inputs, family_limits = found, None
    task_limits = {
        "time_limit_minutes": meta.get("time_limit_minutes"),
        "resources": meta.get("resources"),
        **(family_limits or {}),
    }
    return {
        "labcoat": guarded(labcoat_build),
        "inspect_ai": _inspect_version(),
        "family": family or None,
        "task": guarded(lambda: _task(folder)) if folder is not None else None,
        "grader": guarded(lambda: _grader(family)) if spec else None,
        "inputs": inputs,
        "model": guarded(lambda: _model(state)),
        "hardware": guarded(hardware),
        "limits": {
            "sample": guarded(_sample_limits),
            # the research agent's own limits (None: an agent that applies none)
            "agent": guarded(agent_budget) if state is not None else None,
            "task": task_limits,
            "sandbox": guarded(_sandbox_limits),
            "grader": guarded(lambda: _grader_limits(spec, meta)) if spec else None,
        },
    }

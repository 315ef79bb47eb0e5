"""What a family tells shared code about itself: one `FamilySpec` per family package.

Shared code (the registry, provenance, the report) asks a family's spec instead of
reading the family's metadata by key or branching on its name, so a new family is its
package (with a `SPEC`) and one line in `_registry.FAMILY_MODULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labcoat.families._entry import TaskEntry

if TYPE_CHECKING:  # Inspect is imported only when a task runs (`labcoat list` stays fast)
    from inspect_ai import Task

    from labcoat.families._preflight import Preflight

Metadata = dict[str, Any]
"""A sample's metadata (what the family's task wrote) or a score's."""


@dataclass(frozen=True)
class FamilyProvenance:
    """What a score records of the family's own inputs and limits (see `_provenance`)."""

    inputs: dict[str, Any]
    """The family's inputs: its sidecar's hash, a judge, a pset index, a version."""
    limits: dict[str, Any]
    """The family's own limits, as the sample's metadata gives them."""


def no_family_inputs(meta: Metadata, scored: Metadata) -> FamilyProvenance:
    return FamilyProvenance(inputs={}, limits={})


@dataclass(frozen=True)
class EvalChoices:
    """What `labcoat eval` chose that a family may turn into task arguments of its own."""

    agent_in_sandbox: bool = False
    """The agent works in a sandbox (every agent but the generate-only ones)."""
    idea_hint: bool = False
    """`--idea-hint` (ResearchGym's ablation)."""
    secrets_file: str | None = None
    """`--secrets-file` (RE-Bench's task secrets)."""


def given_args(choices: EvalChoices, given: dict[str, Any]) -> dict[str, Any]:
    return given


def timed_at_top_level(meta: Metadata) -> bool:
    return bool(meta.get("timing_sensitive"))


@dataclass(frozen=True)
class FamilySpec:
    """One benchmark family, as shared code sees it."""

    name: str
    """The family's id: the key in the registry, sample metadata `family`, and the eval's
    `labcoat_family`; a suite keeps the family's tasks in a folder of this name."""
    title: str
    """The benchmark's own spelling, for reports (`RE-Bench`)."""
    code: Path
    """The family's package folder: its grading code, hashed into the grader version."""
    discover: Callable[..., list[TaskEntry]]
    """`discover(folder)`, or `discover(folder, task_ids)` with `discover_by_ids`."""
    task: Callable[..., Task]
    """The family's Inspect @task."""
    task_folder: Callable[[Metadata], Path]
    """The task folder a sample ran (its content hash is in the score's provenance)."""
    provenance: Callable[[Metadata, Metadata], FamilyProvenance] = no_family_inputs
    """The family's inputs and limits, from the sample's metadata and the score's."""
    discover_by_ids: bool = False
    """True: discovery runs code (RE-Bench's get_tasks()), so it loads only the tasks
    named when some are."""
    grader_limits: Callable[[Metadata], dict[str, Any] | None] | None = None
    """Limits of the grader's own sandboxes, for a family whose sample has none."""
    preflight: Callable[[TaskEntry], Preflight] | None = None
    """What `labcoat check` asks of a task before it runs."""
    select_entries: (
        Callable[[list[TaskEntry], list[TaskEntry], dict[str, Any]], list[TaskEntry]] | None
    ) = None
    """Narrows the tasks chosen by the family's task arguments (PaperBench's `split`)."""
    report_rank: int = 1000
    """Where the family comes in a report's lists (lower first)."""
    eval_args: Callable[[EvalChoices, dict[str, Any]], dict[str, Any]] = given_args
    """The family's task arguments for `labcoat eval`'s choices, from those given with
    `-T` (a default the choices imply, or what a flag of the family's sets)."""
    report_sections: tuple[str, ...] = ()
    """The report's family-specific sections to draw (names in
    `labcoat.report._family_sections.SECTIONS`); none: the shared sections only."""
    sample_unit: str = "samples"
    """What the family's samples are called in the tables (`snippets`)."""
    timed: Callable[[Metadata], bool] = timed_at_top_level
    """Whether a sample's score times code (a regrade measures it again), from its
    metadata."""

    def discover_in(self, folder: Path, task_ids: Iterable[str]) -> list[TaskEntry]:
        ids = list(task_ids)
        return self.discover(folder, ids) if ids and self.discover_by_ids else self.discover(folder)

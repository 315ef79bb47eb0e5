"""The judge interface: what a judge is given, what it returns, and a base for batch judges.

Every judge turns a rubric plus views of a submission into a graded tree. Judges that grade
leaves one group at a time derive from `GroupJudge`: it calls `prepare` once per paper (an
LLM judge picks the relevant files per category there), then `grade_group` for each group of
sibling leaves of one category (an LLM judge grades them in one structured-output call),
concurrently, and assembles the tree. A group that raises is graded invalid, not fatal.
"""

from __future__ import annotations

import asyncio
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from labcoat.families.paperbench._files import FileView
from labcoat.families.paperbench._graded import GradedNode, LeafGrade, grade_tree
from labcoat.families.paperbench._paper import Paper
from labcoat.families.paperbench._rubric import NodePath, RubricNode


@dataclass(frozen=True)
class Reproduction:
    """What the reproduction phase reports; absent in Code-Dev, which skips it.

    `started_at` is Unix seconds on the clock that stamps the executed files' mtimes; checks
    use it to tell outputs that `reproduce.sh` wrote from files the agent left behind.
    """

    exit_code: int | None
    timed_out: bool = False
    duration_s: float | None = None
    started_at: float | None = None
    log_tail: str = ""
    changed_files: tuple[str, ...] | None = None
    """Paths (relative to the repo) that `reproduce.sh` created or changed, when the harness
    measured them (a before/after manifest); None when unknown, and judges fall back on mtimes."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables the run was given beyond the reproduction's own (none for the harness's
    first run; a re-run's are `Rerun.env`): the check judge's recompute reads the seed
    offset from them."""


@dataclass(frozen=True)
class Rerun:
    """`reproduce.sh` run again on a fresh copy with other environment variables (a changed
    seed): the executed copy and its report. Results that do not change with the seed, or
    that stop passing their checks, were not computed by the code."""

    executed: FileView
    reproduction: Reproduction
    env: Mapping[str, str] = field(default_factory=dict)
    check_seed: int | None = None
    """The graders' draw for the `recompute` checks (which claimed seeds the reference
    recomputes), made after both reproductions so that reproduce.sh cannot know it, and
    given only to the reference's process; None: the judge draws one."""


@dataclass(frozen=True)
class JudgeInput:
    """Everything a judge may look at for one paper attempt.

    `rubric` is the tree to grade, already reduced (`code_dev`) or reweighted
    (`resources_provided`) as the run asks; `executed` is None when reproduction was skipped.
    `code_dev` says the run is PaperBench Code-Dev: nothing was or will be executed, so a
    judge must not ask for (or show) `reproduce.sh` and its log. `rerun` is a second
    reproduction with a changed seed, when the harness made one (see the `check` judge).
    """

    paper: Paper
    rubric: RubricNode
    submission: FileView
    executed: FileView | None = None
    reproduction: Reproduction | None = None
    code_dev: bool = False
    rerun: Rerun | None = None


@dataclass(frozen=True)
class JudgeUsage:
    """Cost counters: model calls, tokens, and calls answered from the cache."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_hits: int = 0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_hits + other.cache_hits,
        )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_hits": self.cache_hits,
        }


@dataclass(frozen=True)
class JudgeResult:
    """A graded tree, what grading it cost, and which judge graded it."""

    tree: GradedNode
    usage: JudgeUsage = JudgeUsage()
    judge: str = ""
    flags: tuple[str, ...] = ()
    """Integrity findings, one line each, for a person to review (e.g. text in the
    submission aimed at the judge); they do not change the score."""
    model: str | None = None
    """The model the judge called (`provider/name`); None for a judge without one."""
    prompt_version: str | None = None
    prompt_hash: str | None = None
    """The version of the judge's prompts and a hash of their text; None without prompts."""

    def identity(self) -> dict[str, str | None]:
        """What graded: the judge's name, model and prompts (the score's `judge_info`)."""
        return {
            "name": self.judge,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "prompt_hash": self.prompt_hash,
        }

    @property
    def score(self) -> float:
        return self.tree.score

    @property
    def invalid_leaves(self) -> int:
        """Leaves the judge could not grade (counted as 0 in the score)."""
        return sum(1 for _, n in self.tree.leaves() if not n.valid_score)


@runtime_checkable
class Judge(Protocol):
    """Anything that grades a paper attempt."""

    name: str

    async def judge(self, inp: JudgeInput) -> JudgeResult: ...


# --- grading leaves in groups ---------------------------------------------------------------


@dataclass(frozen=True)
class LeafGroup:
    """Sibling leaves of one task category, graded together."""

    parent: NodePath
    category: str
    leaves: tuple[tuple[NodePath, RubricNode], ...]


def leaf_groups(rubric: RubricNode) -> list[LeafGroup]:
    """The rubric's leaves grouped by (parent, category), in tree order."""
    groups: dict[tuple[NodePath, str], list[tuple[NodePath, RubricNode]]] = {}
    for path, leaf in rubric.leaves():
        key = (path[:-1], leaf.task_category or "")
        groups.setdefault(key, []).append((path, leaf))
    return [LeafGroup(parent, cat, tuple(leaves)) for (parent, cat), leaves in groups.items()]


def pack_groups(groups: list[LeafGroup], max_leaves: int) -> list[LeafGroup]:
    """Sibling groups packed, in tree order, into batches of at most `max_leaves` leaves of
    one category under one top-level requirement, so that one call grades several small
    groups; a batch's `parent` is its groups' common ancestor. Groups larger than
    `max_leaves` stay whole (the judge cuts them)."""
    batches: list[LeafGroup] = []
    open_batch: dict[tuple[str, NodePath], int] = {}  # (category, top-level) -> position
    for group in groups:
        key = (group.category, group.parent[:1])
        at = open_batch.get(key)
        if at is not None and len(batches[at].leaves) + len(group.leaves) <= max_leaves:
            current = batches[at]
            batches[at] = LeafGroup(
                _common(current.parent, group.parent),
                group.category,
                current.leaves + group.leaves,
            )
            continue
        open_batch[key] = len(batches)
        batches.append(group)
    return batches


def _common(a: NodePath, b: NodePath) -> NodePath:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


@dataclass(frozen=True)
class GroupResult:
    """What grading one group returned: grades by path, and what it cost."""

    grades: Mapping[NodePath, LeafGrade]
    usage: JudgeUsage = JudgeUsage()


class GroupJudge(ABC):
    """Base for judges that grade a rubric one `LeafGroup` at a time."""

    name: str = "group"
    max_concurrency: int = 8

    async def prepare(self, inp: JudgeInput) -> Any:
        """Once per paper attempt, before any group; its return value reaches every group."""
        return None

    @abstractmethod
    async def grade_group(self, inp: JudgeInput, context: Any, group: LeafGroup) -> GroupResult:
        """Grade every leaf of `group`, keyed by its path in `inp.rubric`."""

    def prepare_usage(self, context: Any) -> JudgeUsage:
        """What `prepare` cost (e.g. an LLM judge's file-selection calls), read from its context."""
        return JudgeUsage()

    def flags_of(self, context: Any) -> list[str]:
        """Integrity findings of this attempt, read from `prepare`'s context."""
        return []

    def identity_of(self, context: Any) -> dict[str, str | None]:
        """The model and prompts that graded (`JudgeResult`'s fields), from `prepare`'s
        context: none for a judge that calls no model."""
        return {}

    def groups(self, rubric: RubricNode) -> list[LeafGroup]:
        """How the rubric's leaves are graded together: sibling groups by default."""
        return leaf_groups(rubric)

    async def judge(self, inp: JudgeInput) -> JudgeResult:
        context = await self.prepare(inp)
        limit = asyncio.Semaphore(max(1, self.max_concurrency))

        async def run(group: LeafGroup) -> GroupResult:
            async with limit:
                try:
                    return await self.grade_group(inp, context, group)
                except Exception as ex:  # a failed group is graded invalid; others go on
                    message = f"judge error: {type(ex).__name__}: {ex}"
                    return GroupResult({p: LeafGrade.invalid(message) for p, _ in group.leaves})

        results = await asyncio.gather(*(run(g) for g in self.groups(inp.rubric)))
        grades: dict[NodePath, LeafGrade] = {}
        usage = self.prepare_usage(context)
        for r in results:
            grades.update(r.grades)
            usage += r.usage
        flags = tuple(self.flags_of(context))
        tree = grade_tree(inp.rubric, grades)
        return JudgeResult(tree, usage, self.name, flags, **self.identity_of(context))


# --- caching by content -----------------------------------------------------------------------


def content_key(*parts: str | bytes) -> str:
    """A stable key for a judge call: hash of everything the answer depends on."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


class JudgeCache(Protocol):
    """Where a judge keeps answers by `content_key`, so re-grading an unchanged leaf is free."""

    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, value: Any) -> None: ...


@dataclass
class MemoryCache:
    """A `JudgeCache` in a dict (per process)."""

    entries: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any | None:
        return self.entries.get(key)

    def put(self, key: str, value: Any) -> None:
        self.entries[key] = value

"""Baseline judges for tests and for calibrating JudgeEval: upstream's dummy (every leaf
passes) and random (a fair coin per leaf, drawn in upstream's order) judges."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from typing import Any

from labcoat.families.paperbench._graded import LeafGrade, grade_tree
from labcoat.families.paperbench._judge import (
    GroupJudge,
    GroupResult,
    JudgeInput,
    JudgeResult,
    JudgeUsage,
    LeafGroup,
)
from labcoat.families.paperbench._rubric import NodePath, RubricNode


class DummyJudge(GroupJudge):
    """Every leaf gets the same score (1.0 by default: the "always pass" baseline)."""

    name = "dummy"

    def __init__(self, score: float = 1.0) -> None:
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"score must be in [0, 1], got {score}")
        self.score = float(score)

    async def grade_group(self, inp: JudgeInput, context: Any, group: LeafGroup) -> GroupResult:
        grade = LeafGrade(self.score, True, f"dummy judge: every leaf scores {self.score:g}")
        return GroupResult({path: grade for path, _ in group.leaves})


class RandomJudge:
    """Each leaf passes or fails by a fair coin, drawn as upstream's RandomJudge draws it.

    Upstream calls `random.randint(0, 1)` once per leaf, in the order its asyncio grader
    reaches the leaves: breadth-first (every `asyncio.gather` queues a node's children behind
    the nodes already queued). This judge draws `randint(0, 1)` from `random.Random(seed)`
    in that same order, so its grades are upstream's after `random.seed(seed)`. Pass one
    `rng` to several calls to continue one stream across papers, as upstream's process-wide
    generator does over the cases of a JudgeEval run. With `p` other than 0.5, a leaf passes
    when `rng.random() < p` instead.
    """

    name = "random"

    def __init__(self, seed: int = 0, p: float = 0.5, rng: random.Random | None = None) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.seed = seed
        self.p = p
        self.rng = rng

    async def judge(self, inp: JudgeInput) -> JudgeResult:
        rng = self.rng if self.rng is not None else random.Random(self.seed)
        grades: dict[NodePath, LeafGrade] = {}
        for path, _ in breadth_first_leaves(inp.rubric):
            draw = rng.randint(0, 1) if self.p == 0.5 else int(rng.random() < self.p)
            grades[path] = LeafGrade(float(draw), True, f"random judge (seed {self.seed})")
        return JudgeResult(grade_tree(inp.rubric, grades), JudgeUsage(), self.name)


def breadth_first_leaves(root: RubricNode) -> Iterator[tuple[NodePath, RubricNode]]:
    """The leaves in the order upstream's grader reaches them: level by level."""
    queue: deque[tuple[NodePath, RubricNode]] = deque([((), root)])
    while queue:
        path, node = queue.popleft()
        if node.is_leaf:
            yield path, node
        else:
            queue.extend(((*path, i), c) for i, c in enumerate(node.sub_tasks))

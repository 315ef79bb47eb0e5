"""Graded rubric trees: per-leaf grades, weighted-mean scoring, and human-graded trees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from labcoat._errors import TaskDataError
from labcoat.families.paperbench._rubric import (
    NodePath,
    RubricNode,
    node_field,
    parse_tree,
    read_json,
)

AGGREGATED = "Aggregated score from sub-tasks."


@dataclass(frozen=True)
class LeafGrade:
    """A judge's verdict on one leaf.

    `valid` is False when the judge could not grade the leaf (an error, no check, no
    output): the score is then 0 and the leaf is reported apart from honest zeros.
    """

    score: float
    valid: bool = True
    explanation: str = ""
    metadata: Mapping[str, Any] | None = None

    @staticmethod
    def invalid(explanation: str, metadata: Mapping[str, Any] | None = None) -> LeafGrade:
        return LeafGrade(0.0, False, explanation, metadata)


@dataclass(frozen=True, kw_only=True)
class GradedNode(RubricNode):
    """A rubric node with its grade; the native graded shape adds these four fields."""

    score: float
    valid_score: bool = True
    explanation: str = ""
    judge_metadata: Mapping[str, Any] | None = None

    def rubric(self) -> RubricNode:
        """The ungraded rubric this tree grades (for re-grading it, as JudgeEval does)."""
        return RubricNode(
            id=self.id,
            requirements=self.requirements,
            weight=self.weight,
            sub_tasks=tuple(c.rubric() for c in self.sub_tasks),
            task_category=self.task_category,
            finegrained_task_category=self.finegrained_task_category,
            origin=self.origin,
        )

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(
            score=self.score,
            valid_score=self.valid_score,
            explanation=self.explanation,
            judge_metadata=dict(self.judge_metadata) if self.judge_metadata is not None else None,
        )
        return out


def weighted_score(children: Sequence[GradedNode]) -> float:
    """The weight-averaged mean of the children's scores; 0 when all weights are 0."""
    total = sum(c.weight for c in children)
    if total == 0:
        return 0.0
    return sum(c.weight * c.score for c in children) / total


def grade_tree(rubric: RubricNode, grades: Mapping[NodePath, LeafGrade]) -> GradedNode:
    """Assemble a graded tree from per-leaf grades keyed by path in `rubric`.

    A leaf without a grade is graded invalid ("not graded"), never silently dropped.
    """
    return _assemble(rubric, (), grades)


def _assemble(node: RubricNode, path: NodePath, grades: Mapping[NodePath, LeafGrade]) -> GradedNode:
    if node.is_leaf:
        grade = grades.get(path) or LeafGrade.invalid("not graded")
        return GradedNode(
            id=node.id,
            requirements=node.requirements,
            weight=node.weight,
            task_category=node.task_category,
            finegrained_task_category=node.finegrained_task_category,
            origin=node.origin,
            score=float(grade.score),
            valid_score=grade.valid,
            explanation=grade.explanation,
            judge_metadata=dict(grade.metadata) if grade.metadata is not None else None,
        )
    children = tuple(_assemble(c, (*path, i), grades) for i, c in enumerate(node.sub_tasks))
    return _internal(node, children)


def _internal(node: RubricNode, children: tuple[GradedNode, ...]) -> GradedNode:
    return GradedNode(
        id=node.id,
        requirements=node.requirements,
        weight=node.weight,
        sub_tasks=children,
        task_category=None,
        finegrained_task_category=node.finegrained_task_category,
        origin=node.origin,
        score=weighted_score(children),
        valid_score=all(c.valid_score for c in children),
        explanation=AGGREGATED,
        judge_metadata=None,
    )


def rescore(tree: GradedNode) -> GradedNode:
    """Recompute every internal score from the leaves (after a transform changed the tree)."""
    if tree.is_leaf:
        return tree
    return _internal(tree, tuple(rescore(c) for c in tree.sub_tasks))


def leaf_grades(tree: GradedNode) -> dict[NodePath, LeafGrade]:
    """The per-leaf grades of a graded tree, keyed by path."""
    return {
        p: LeafGrade(n.score, n.valid_score, n.explanation, n.judge_metadata)
        for p, n in tree.leaves()
    }


def with_weights_of(tree: GradedNode, rubric: RubricNode) -> GradedNode:
    """`tree` rescored with the weights of `rubric` (same shape), e.g. `resources_provided`."""
    if [p for p, _ in tree.walk()] != [p for p, _ in rubric.walk()]:
        raise ValueError("the graded tree and the rubric do not have the same shape")
    return rescore(_reweight(tree, rubric))


def _reweight(tree: GradedNode, rubric: RubricNode) -> GradedNode:
    children = tuple(_reweight(c, r) for c, r in zip(tree.sub_tasks, rubric.sub_tasks, strict=True))
    return replace(tree, weight=rubric.weight, sub_tasks=children)


# --- loading ---------------------------------------------------------------------------------


def load_graded_tree(file: str | Path) -> GradedNode:
    """Load a graded tree in the native shape, e.g. a human-graded `expected_result.json`."""
    return parse_graded_tree(read_json(file), file)


def load_tree(file: str | Path) -> RubricNode:
    """A `rubric.json`, or a graded tree (its root carries a `score`), validated as what it is."""
    data = read_json(file)
    if isinstance(data, dict) and ("score" in data or "graded_task_tree" in data):
        return parse_graded_tree(data, file)
    return parse_tree(data, file, RubricNode, None)


def parse_graded_tree(data: Any, file: str | Path = "graded.json") -> GradedNode:
    # Upstream wraps some outputs as {"graded_task_tree": {...}}; accept either.
    if isinstance(data, dict) and "sub_tasks" not in data and "graded_task_tree" in data:
        data = data["graded_task_tree"]
    return parse_tree(data, file, GradedNode, _grade_fields)


def _grade_fields(data: dict[str, Any], file: str, path: NodePath) -> dict[str, Any]:
    if "score" not in data:
        raise TaskDataError(file, node_field(path, "score"), "missing")
    score = data["score"]
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise TaskDataError(
            file, node_field(path, "score"), f"must be a number in [0, 1], got {score!r}"
        )
    valid = _flag(data.get("valid_score", True))
    if valid is None:
        raise TaskDataError(
            file,
            node_field(path, "valid_score"),
            f"must be true or false (or 1 / 0), got {data.get('valid_score')!r}",
        )
    explanation = data.get("explanation") or ""
    if not isinstance(explanation, str):
        raise TaskDataError(
            file, node_field(path, "explanation"), f"must be a string, got {explanation!r}"
        )
    metadata = data.get("judge_metadata")
    return {
        "score": float(score),
        "valid_score": valid,
        "explanation": explanation,
        "judge_metadata": metadata if isinstance(metadata, dict) else None,
    }


def _flag(value: Any) -> bool | None:
    """A boolean as upstream writes it: true/false, or 1/0 (some human trees write 1.0)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    return None

"""The judge interface, grouping of leaves, the dummy and random judges, caching helpers."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from labcoat._errors import LabcoatError
from labcoat.families.paperbench import (
    CheckJudge,
    DummyJudge,
    GroupJudge,
    GroupResult,
    Judge,
    JudgeInput,
    JudgeUsage,
    LeafGrade,
    LeafGroup,
    LLMJudge,
    LocalFiles,
    MemoryCache,
    Paper,
    RandomJudge,
    content_key,
    leaf_groups,
    load_rubric,
    make_judge,
    parse_rubric,
)

from ._helpers import PEER_PAPERS, leaf, node

pytestmark = pytest.mark.anyio

RUBRIC = parse_rubric(
    node(
        "root",
        node("a", leaf("a1"), leaf("a2", category="Code Execution"), leaf("a3")),
        node("b", leaf("b1", category="Result Analysis")),
    )
)


def inp(tmp_path: Path, rubric=RUBRIC, paper_id: str = "toy") -> JudgeInput:
    view = LocalFiles(tmp_path)
    return JudgeInput(Paper(id=paper_id, title=paper_id, path=tmp_path), rubric, view, view)


def test_leaf_groups_are_siblings_of_one_category() -> None:
    groups = leaf_groups(RUBRIC)
    assert [(g.parent, g.category, [p for p, _ in g.leaves]) for g in groups] == [
        ((0,), "Code Development", [(0, 0), (0, 2)]),
        ((0,), "Code Execution", [(0, 1)]),
        ((1,), "Result Analysis", [(1, 0)]),
    ]


def test_peer_rubric_groups_cover_every_leaf() -> None:
    rubric = load_rubric(PEER_PAPERS / "self-expansion" / "rubric.json")
    groups = leaf_groups(rubric)
    assert sum(len(g.leaves) for g in groups) == 253
    assert len(groups) < 253  # batching does save calls


async def test_dummy_judge(tmp_path: Path) -> None:
    result = await DummyJudge().judge(inp(tmp_path))
    assert result.score == 1.0 and result.tree.valid_score and result.judge == "dummy"
    assert (await DummyJudge(0.0).judge(inp(tmp_path))).score == 0.0
    with pytest.raises(ValueError):
        DummyJudge(2.0)


async def test_random_judge_is_seeded_per_leaf(tmp_path: Path) -> None:
    rubric = load_rubric(PEER_PAPERS / "self-composing-policies" / "rubric.json")
    first = await RandomJudge(seed=3).judge(inp(tmp_path, rubric))
    again = await RandomJudge(seed=3).judge(inp(tmp_path, rubric))
    other = await RandomJudge(seed=4).judge(inp(tmp_path, rubric))
    scores = [n.score for _, n in first.tree.leaves()]
    assert scores == [n.score for _, n in again.tree.leaves()]
    assert scores != [n.score for _, n in other.tree.leaves()]
    assert set(scores) == {0.0, 1.0}
    assert 0.35 < sum(scores) / len(scores) < 0.65  # 275 fair coins
    # upstream's draws: randint(0, 1) per leaf, breadth first, from one generator
    rng = random.Random(3)
    drawn = {path: rng.randint(0, 1) for path in breadth_first(rubric)}
    assert {p: n.score for p, n in first.tree.leaves()} == drawn
    # a shared generator goes on from one paper to the next, as upstream's process-wide one
    shared = random.Random(3)
    one = await RandomJudge(seed=3, rng=shared).judge(inp(tmp_path, rubric))
    two = await RandomJudge(seed=3, rng=shared).judge(inp(tmp_path, rubric))
    assert [n.score for _, n in one.tree.leaves()] == scores
    assert [n.score for _, n in two.tree.leaves()] != scores


def breadth_first(rubric) -> list[tuple[int, ...]]:
    """Leaf paths level by level, written out from the definition."""
    level, out = [((), rubric)], []
    while level:
        out += [p for p, n in level if n.is_leaf]
        level = [((*p, i), c) for p, n in level for i, c in enumerate(n.sub_tasks)]
    return out


async def test_random_judge_extremes(tmp_path: Path) -> None:
    assert (await RandomJudge(p=0.0).judge(inp(tmp_path))).score == 0.0
    assert (await RandomJudge(p=1.0).judge(inp(tmp_path))).score == 1.0


class FlakyJudge(GroupJudge):
    """Fails on the Code Execution group, charges one call per group otherwise."""

    name = "flaky"

    async def prepare(self, inp: JudgeInput) -> Any:
        return "context"

    async def grade_group(self, inp: JudgeInput, context: Any, group: LeafGroup) -> GroupResult:
        assert context == "context"
        if group.category == "Code Execution":
            raise RuntimeError("model unavailable")
        grades = {p: LeafGrade(1.0, True, "ok") for p, _ in group.leaves}
        return GroupResult(grades, JudgeUsage(calls=1, input_tokens=100, output_tokens=10))


async def test_a_failing_group_is_graded_invalid(tmp_path: Path) -> None:
    result = await FlakyJudge().judge(inp(tmp_path))
    bad = result.tree.at((0, 1))
    assert (bad.score, bad.valid_score) == (0.0, False)
    assert "RuntimeError: model unavailable" in bad.explanation
    assert result.invalid_leaves == 1
    assert result.usage == JudgeUsage(calls=2, input_tokens=200, output_tokens=20)
    assert result.usage.tokens == 220
    # a: (1 + 0 + 1) / 3, b: 1 -> root (2/3 + 1) / 2
    assert result.score == pytest.approx((2 / 3 + 1) / 2)


def test_judges_satisfy_the_protocol() -> None:
    for judge in (CheckJudge(), DummyJudge(), RandomJudge(), FlakyJudge()):
        assert isinstance(judge, Judge)


def test_make_judge() -> None:
    assert isinstance(make_judge("dummy", score=0.5), DummyJudge)
    assert isinstance(make_judge("random", seed=1), RandomJudge)
    assert isinstance(make_judge("check"), CheckJudge)
    assert isinstance(make_judge("llm", model="mockllm/model", cache=MemoryCache()), LLMJudge)
    with pytest.raises(LabcoatError, match="unknown PaperBench judge"):
        make_judge("oracle")


def test_content_key_and_cache() -> None:
    assert content_key("a", "b") == content_key("a", "b")
    assert content_key("ab", "") != content_key("a", "b")  # parts are length-prefixed
    assert content_key("x") == content_key(b"x")
    cache = MemoryCache()
    assert cache.get("k") is None
    cache.put("k", {"score": 1})
    assert cache.get("k") == {"score": 1}


def test_small_sibling_groups_are_packed_in_tree_order() -> None:
    from labcoat.families.paperbench._judge import pack_groups

    rubric = parse_rubric(
        node(
            "r",
            node(
                "a",
                node("a1", leaf("x1"), leaf("x2")),
                node("a2", leaf("x3"), leaf("e1", category="Code Execution")),
            ),
            node("b", leaf("y1"), leaf("y2")),
        )
    )
    groups = leaf_groups(rubric)
    assert len(groups) == 4
    packed = pack_groups(groups, max_leaves=12)
    shapes = [(g.parent, g.category, [leaf.id for _, leaf in g.leaves]) for g in packed]
    assert shapes == [
        ((0,), "Code Development", ["x1", "x2", "x3"]),  # two parents under one top-level node
        ((0, 1), "Code Execution", ["e1"]),
        ((1,), "Code Development", ["y1", "y2"]),  # another top-level node: another call
    ]
    assert [len(g.leaves) for g in pack_groups(groups, max_leaves=2)] == [2, 1, 1, 2]


async def test_a_packed_call_names_each_leafs_own_parents(tmp_path: Path) -> None:
    from ._judge_stub import JudgeStub

    rubric = parse_rubric(
        node("r", node("a", node("a1", leaf("x1")), node("a2", leaf("x2"))), weight=1)
    )
    stub = JudgeStub()
    result = await LLMJudge(stub.model(), cache=MemoryCache()).judge(inp(tmp_path, rubric))
    [prompt] = stub.grading_prompts()
    assert result.usage.calls == 1 and result.score == 1.0
    assert "Under -> requirement a1:\n[L1] requirement x1" in prompt
    assert "Under -> requirement a2:\n[L2] requirement x2" in prompt

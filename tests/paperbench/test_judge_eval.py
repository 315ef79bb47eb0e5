"""JudgeEval metrics: hand-computed cases, failures counted as wrong, the peer human trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labcoat._errors import LabcoatError
from labcoat.families.paperbench import (
    Confusion,
    DummyJudge,
    GradedNode,
    JudgeEvalCase,
    JudgeEvalItem,
    JudgeUsage,
    LeafGrade,
    LocalFiles,
    Paper,
    RandomJudge,
    evaluate_judge,
    grade_tree,
    judge_eval,
    load_expected_results,
    parse_rubric,
)

from ._helpers import PEER_JUDGE_EVAL, leaf, node

pytestmark = pytest.mark.anyio

CATS = ["Code Development", "Code Development", "Code Execution", "Result Analysis"]
RUBRIC = parse_rubric(node("r", *(leaf(f"l{i}", category=c) for i, c in enumerate(CATS))))


def graded(scores: list[float | None]) -> GradedNode:
    """A tree over RUBRIC's four leaves; None marks a leaf the judge failed to grade."""
    grades = {
        (i,): LeafGrade.invalid("boom") if s is None else LeafGrade(s) for i, s in enumerate(scores)
    }
    return grade_tree(RUBRIC, grades)


def case(truth: list[float], pred: list[float | None], **kw) -> JudgeEvalCase:
    return JudgeEvalCase("toy", graded(pred), graded(truth), **kw)  # type: ignore[arg-type]


def test_balanced_case_by_hand() -> None:
    report = judge_eval([case([1, 1, 0, 0], [1, 0, 1, 0])])
    o = report.overall
    assert (o.tp, o.fn, o.fp, o.tn, o.failed) == (1, 1, 1, 1, 0)
    assert (o.accuracy, o.precision, o.recall, o.f1, o.macro_f1) == (0.5, 0.5, 0.5, 0.5, 0.5)


def test_unbalanced_case_by_hand() -> None:
    # truth 1 1 1 0, pred 1 1 0 0: tp 2, fn 1, tn 1, fp 0
    o = judge_eval([case([1, 1, 1, 0], [1, 1, 0, 0])]).overall
    assert o.accuracy == 0.75
    assert o.precision == 1.0
    assert o.recall == pytest.approx(2 / 3)
    assert o.f1 == pytest.approx(0.8)  # 2*2 / (2*2 + 0 + 1)
    # class 0: precision 1/2, recall 1, f1 2/3
    assert o.macro_precision == pytest.approx((1 + 0.5) / 2)
    assert o.macro_recall == pytest.approx((2 / 3 + 1) / 2)
    assert o.macro_f1 == pytest.approx((0.8 + 2 / 3) / 2)


def test_failed_leaves_are_left_out_as_upstream_does_and_counted_as_wrong_in_strict() -> None:
    # leaf 0: truth 1, judge failed; leaf 3: truth 0, judge failed
    o = judge_eval([case([1, 1, 0, 0], [None, 1, 0, None])]).overall
    assert (o.tp, o.fn, o.fp, o.tn, o.failed) == (1, 0, 0, 1, 2)
    assert (o.n, o.accuracy, o.macro_f1) == (2, 1.0, 1.0)
    strict = o.strict()  # a failure is a false negative (truth 1) or a false positive (truth 0)
    assert (strict.tp, strict.fn, strict.fp, strict.tn) == (1, 1, 1, 1)
    assert strict.accuracy == 0.5
    assert o.to_json()["strict"]["accuracy"] == 0.5


def test_per_category_and_usage_per_leaf() -> None:
    report = judge_eval(
        [
            case([1, 0, 1, 1], [1, 0, 0, 1], usage=JudgeUsage(calls=3, input_tokens=700)),
            case([1, 1, 1, 1], [1, 1, 1, 1], usage=JudgeUsage(calls=1, output_tokens=100)),
        ],
        judge="x",
    )
    assert report.overall.n == 8
    dev = report.by_category["Code Development"]
    assert (dev.tp, dev.tn, dev.fp, dev.fn) == (3, 1, 0, 0)
    exe = report.by_category["Code Execution"]
    assert (exe.tp, exe.fn) == (1, 1)
    assert report.by_category["Result Analysis"].accuracy == 1.0
    assert report.calls_per_leaf == 0.5
    assert report.tokens_per_leaf == 100.0
    assert report.by_paper["toy"].n == 8
    data = report.to_json()
    assert data["judge"] == "x" and data["overall"]["leaves"] == 8


def test_one_class_only_macro_average_like_scikit_learn() -> None:
    # all truths and predictions positive: class 0 is absent and left out of the macro mean
    o = judge_eval([case([1, 1, 1, 1], [1, 1, 1, 1])]).overall
    assert o.macro_f1 == 1.0
    assert Confusion().macro_f1 == 0.0


def test_human_leaves_without_a_valid_grade_are_skipped() -> None:
    truth = grade_tree(
        RUBRIC,
        {
            (0,): LeafGrade(1.0),
            (1,): LeafGrade.invalid("?"),
            (2,): LeafGrade(0.0),
            (3,): LeafGrade(0.0),
        },
    )
    report = judge_eval([JudgeEvalCase("toy", graded([1, 1, 0, 0]), truth)])
    assert report.skipped == 1 and report.overall.n == 3


def test_mismatched_trees_are_an_error() -> None:
    other = parse_rubric(node("r", *(leaf(f"m{i}") for i in range(4))))
    truth = grade_tree(other, {(i,): LeafGrade(1.0) for i in range(4)})
    with pytest.raises(LabcoatError, match="does not match"):
        judge_eval([JudgeEvalCase("toy", graded([1, 1, 1, 1]), truth)])
    small = parse_rubric(node("r", leaf("l0")))
    with pytest.raises(LabcoatError, match="not a leaf of the human tree"):
        judge_eval([JudgeEvalCase("toy", graded([1, 1, 1, 1]), grade_tree(small, {}))])


# --- the peer human-graded trees ---------------------------------------------------------------


def human_leaf_labels() -> dict[str, list[tuple[str, int]]]:
    """(category, 0/1) of every leaf, read straight from the JSON without labcoat."""

    def walk(n: dict, out: list) -> list:
        if not n["sub_tasks"]:
            out.append((n["task_category"], int(n["score"] >= 0.5)))
        for c in n["sub_tasks"]:
            walk(c, out)
        return out

    return {
        d.name: walk(json.loads((d / "expected_result.json").read_text()), [])
        for d in sorted(PEER_JUDGE_EVAL.iterdir())
    }


async def run_on_peer(judge, tmp_path: Path):
    expected = load_expected_results(PEER_JUDGE_EVAL)
    items = [
        JudgeEvalItem(Paper(id=k, title=k, path=tmp_path), tree, LocalFiles(tmp_path))
        for k, tree in expected.items()
    ]
    return await evaluate_judge(judge, items)


async def test_dummy_pass_on_human_trees(tmp_path: Path) -> None:
    labels = human_leaf_labels()
    n = sum(len(v) for v in labels.values())
    pos = sum(y for v in labels.values() for _, y in v)
    assert (n, pos) == (79 + 174, 74 + 84)
    report = await run_on_peer(DummyJudge(1.0), tmp_path)
    o = report.overall
    assert (o.n, o.tp, o.fp, o.tn, o.fn, o.failed) == (n, pos, n - pos, 0, 0, 0)
    assert o.accuracy == pytest.approx(pos / n)
    assert o.precision == pytest.approx(pos / n)
    assert o.recall == 1.0
    assert o.f1 == pytest.approx(2 * pos / (2 * pos + (n - pos)))
    assert o.macro_f1 == pytest.approx(o.f1 / 2)  # class 0 present in truth, F1 0
    for category in ("Code Development", "Code Execution", "Result Analysis"):
        ys = [y for v in labels.values() for c, y in v if c == category]
        assert report.by_category[category].accuracy == pytest.approx(sum(ys) / len(ys))
    assert report.calls_per_leaf == 0.0


async def test_dummy_fail_on_human_trees(tmp_path: Path) -> None:
    o = (await run_on_peer(DummyJudge(0.0), tmp_path)).overall
    neg = 253 - 158
    assert o.accuracy == pytest.approx(neg / 253)
    assert o.f1 == 0.0
    assert o.macro_f1 == pytest.approx((2 * neg / (2 * neg + 158)) / 2)


async def test_random_on_human_trees(tmp_path: Path) -> None:
    report = await run_on_peer(RandomJudge(seed=0), tmp_path)
    again = await run_on_peer(RandomJudge(seed=0), tmp_path)
    assert report.overall == again.overall
    assert (await run_on_peer(RandomJudge(seed=1), tmp_path)).overall != report.overall
    o = report.overall
    assert o.n == 253 and o.failed == 0
    assert o.tp + o.fn == 158
    # a coin knows nothing: accuracy near one half, far from a real judge's
    assert 0.35 < o.accuracy < 0.65
    assert set(report.by_paper) == {"all-in-one", "semantic-self-consistency"}
    assert sum(c.n for c in report.by_category.values()) == 253

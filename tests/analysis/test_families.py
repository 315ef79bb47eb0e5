"""Family tables from logs in the shapes each family's scorer writes (or is to write)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from labcoat.analysis import (
    paperbench_categories,
    paperbench_papers,
    read_runs,
    researchcodebench_ablation,
    researchcodebench_errors,
    researchcodebench_papers,
    researchgym_subtasks,
    task_summary,
)
from labcoat.analysis._family_paperbench import category_scores

from ._synthetic import Sample, researchgym_figures, write_log


def _researchgym(epoch: int, raws: dict[str, float | None]) -> Sample:
    value, metadata = researchgym_figures(raws)
    return Sample(
        epoch=epoch,
        task_id="ci",
        normalized=metadata["primary"]["normalized"],
        raw=value["completion_rate"],
        value=value,
        score_metadata=metadata,
    )


def test_researchgym_subtasks_completion_and_improvement(tmp_path: Path) -> None:
    write_log(
        tmp_path,
        [
            # sub1 and sub2 complete (primary mean 0.65 beats 0.5), sub3 not
            _researchgym(1, {"sub1": 0.8, "sub2": 0.5, "sub3": None}),
            # sub2 missing: no primary value, nothing beaten
            _researchgym(2, {"sub1": 0.4, "sub2": None, "sub3": 0.6}),
        ],
        family="researchgym",
    )
    data = read_runs(tmp_path)
    row = task_summary(data).iloc[0]
    assert row["completion_rate"] == pytest.approx(((2 / 3) + (2 / 3)) / 2)
    assert row["improved_rate"] == 0.5  # the family's own verdict: one run of two
    assert row["mean"] == pytest.approx((0.65 / 0.9 + 0.0) / 2)
    table = researchgym_subtasks(data).set_index("id")
    assert table.loc["sub1", "mean"] == 1.0  # completed in both runs
    assert table.loc["sub2", "valid_rate"] == 0.5
    assert table.loc["sub1", "beats_baseline_rate"] == 0.5  # 0.8 > 0.5, 0.4 < 0.5
    assert bool(table.loc["sub3", "primary"]) is False


def _leaf(score: float, weight: int, category: str, valid: bool = True) -> dict:
    return {
        "id": "x",
        "requirements": "",
        "weight": weight,
        "sub_tasks": [],
        "task_category": category,
        "finegrained_task_category": "Method Implementation",
        "score": score,
        "valid_score": valid,
    }


def _tree(a1: float, a2: float, b1: float, b2: float) -> dict:
    """root: A (weight 1) = [a1 Code Development, a2 Code Execution];
    B (weight 3) = [b1 Code Development (1), b2 Result Analysis (2)]."""
    a = {
        "id": "A",
        "weight": 1,
        "sub_tasks": [_leaf(a1, 1, "Code Development"), _leaf(a2, 1, "Code Execution")],
    }
    b = {
        "id": "B",
        "weight": 3,
        "sub_tasks": [
            _leaf(b1, 1, "Code Development", valid=False),
            _leaf(b2, 2, "Result Analysis"),
        ],
    }
    return {"id": "root", "weight": 1, "sub_tasks": [a, b]}


def test_paperbench_category_scores_by_hand() -> None:
    rows = {r["id"]: r for r in category_scores(_tree(1, 0, 0, 1), "task_category")}
    # effective weights: a1 = a2 = 1/4 * 1/2 = 1/8, b1 = 3/4 * 1/3 = 1/4, b2 = 3/4 * 2/3 = 1/2
    assert rows["Code Development"]["normalized"] == pytest.approx((1 / 8) / (1 / 8 + 1 / 4))
    assert rows["Code Execution"]["normalized"] == 0.0
    assert rows["Result Analysis"]["normalized"] == 1.0
    assert rows["Code Development"]["invalid"] == 1
    # weighted by their rubric weight, the categories add up to the root score 5/8
    total = sum(r["weight"] * r["normalized"] for r in rows.values())
    assert total == pytest.approx(1 / 8 + 1 / 2)


def test_paperbench_papers_and_categories_over_seeds(tmp_path: Path) -> None:
    trees = [_tree(1, 0, 0, 1), _tree(1, 1, 1, 0)]
    samples = [
        Sample(
            task_id="paper-a", epoch=i + 1, normalized=s, raw=s, score_metadata={"graded_tree": t}
        )
        for i, (t, s) in enumerate(zip(trees, [0.625, 0.5], strict=True))
    ]
    samples.append(Sample(task_id="paper-a", epoch=3, error="judge failed"))
    write_log(tmp_path, samples, family="paperbench", eval_metadata={"code_dev": True})
    data = read_runs(tmp_path)
    [paper] = paperbench_papers(data).to_dict("records")
    assert paper["label"] == "mockllm/model [code-dev]"
    assert (paper["runs"], paper["errors"]) == (3, 1)
    assert paper["mean"] == pytest.approx(1.125 / 3)  # the errored seed scores 0
    cats = paperbench_categories(data)
    dev = cats[(cats["paper"] == "paper-a") & (cats["category"] == "Code Development")].iloc[0]
    assert dev["mean"] == pytest.approx((1 / 3 + 1) / 2)
    assert dev["se"] == pytest.approx(abs(1 - 1 / 3) / 2)  # two values: |a - b| / 2
    assert set(cats["paper"]) == {"paper-a", "all"}


def _snippet(
    paper: str, name: str, weight: int, passed: bool, epoch: int = 1, failure: str | None = None
) -> Sample:
    return Sample(
        task_id=paper,
        sample_id=f"{paper}/f.py::{name}",
        epoch=epoch,
        normalized=float(passed),
        raw=float(passed),
        weight=weight,
        metadata={"researchcodebench": {"paper": paper, "snippet": name, "weight": weight}},
        score_metadata={
            "passed": passed,
            "failure": None if passed else failure,
            "flags": [],
            "weak_test": False,
        },
    )


def test_researchcodebench_scaled_pass_at_1_errors_and_ablation(tmp_path: Path) -> None:
    with_paper = [
        _snippet("p", "a", 3, True),
        _snippet("p", "b", 1, False, failure="syntax"),
        _snippet("p", "a", 3, False, epoch=2, failure="wrong_result"),
        _snippet("p", "b", 1, True, epoch=2),
    ]
    without = [_snippet("p", "a", 3, False, failure="syntax"), _snippet("p", "b", 1, True)]
    family = "researchcodebench"
    write_log(tmp_path, with_paper, family=family, eval_metadata={"with_paper": True})
    write_log(tmp_path, without, family=family, eval_metadata={"with_paper": False})
    data = read_runs(tmp_path)
    papers = researchcodebench_papers(data).set_index("label")
    # with the paper: epoch 1 passes 3 of 4 lines (75%), epoch 2 passes 1 of 4 (25%)
    model = papers.loc["mockllm/model"]
    assert model["scaled_pass_at_1"] == pytest.approx(50.0)
    assert model["se"] == pytest.approx(25.0)
    assert model["pass_rate"] == pytest.approx(50.0)
    assert papers.loc["mockllm/model [no paper]", "scaled_pass_at_1"] == pytest.approx(25.0)
    [row] = researchcodebench_ablation(data).to_dict("records")
    spread = {k: row.pop(k) for k in ("se", "ci_low", "ci_high")}
    assert row == {
        "model": "mockllm/model",
        "paper": "p",
        "with_paper": 50.0,
        "without_paper": 25.0,
        "difference": 25.0,
    }
    assert all(math.isnan(v) for v in spread.values())  # one paper: no spread over papers
    errors = researchcodebench_errors(data)
    mine = errors[errors["label"] == "mockllm/model"].set_index("failure")
    assert mine["count"].to_dict() == {"syntax": 1, "wrong_result": 1}
    assert mine["share"].to_dict() == {"syntax": 0.5, "wrong_result": 0.5}
    # a run is one paper in one epoch: 2 epochs with the paper, 1 without
    assert sorted(task_summary(data)["runs"]) == [1, 2]


def test_researchcodebench_errored_snippets_count_as_failed(tmp_path: Path) -> None:
    samples = [
        _snippet("p", "a", 3, True),
        Sample(
            task_id="p",
            sample_id="p/f.py::b",
            error="sandbox died",
            metadata={"researchcodebench": {"paper": "p", "snippet": "b", "weight": 1}},
        ),
    ]
    write_log(tmp_path, samples, family="researchcodebench")
    data = read_runs(tmp_path)
    run = data.runs.iloc[0]
    assert (run["status"], run["sample_errors"]) == ("partial", 1)
    assert run["normalized"] == pytest.approx(0.75)  # 3 of 4 lines
    paper = researchcodebench_papers(data).iloc[0]
    assert paper["scaled_pass_at_1"] == pytest.approx(75.0) and paper["errors"] == 1
    assert not math.isnan(paper["pass_rate"])

"""Error bars over tasks: clustered SEs, paired differences, t quantiles, bootstrap bands,
each against a computation by hand."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd
import pytest

from labcoat.analysis import (
    clustered_se,
    family_best_of_k,
    mean_se,
    paired_difference,
    paired_differences,
    paired_task_differences,
    paperbench_categories,
    read_runs,
    researchcodebench_ablation,
    t_quantile,
    task_bootstrap_band,
    task_mean_se,
)
from labcoat.analysis._tdist import t_cdf

from ._synthetic import Sample, write_log, write_two_models
from .test_families import _snippet, _tree

# task A: 1, 2; task B: 3; task C: 4, 6, 8 (6 runs, 3 tasks)
VALUES = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0]
TASKS = ["A", "A", "B", "C", "C", "C"]


def test_clustered_se_by_hand() -> None:
    c = clustered_se(VALUES, TASKS)
    # m = 24 / 6 = 4; per-task sums of deviations: A (1-4)+(2-4) = -5, B -1, C 0+2+4 = 6
    # Σ_c (Σ_i (s - m))² = 25 + 1 + 36 = 62; times C/(C-1) = 3/2 -> 93; √93 / N
    assert (c.mean, c.tasks, c.runs) == (4.0, 3, 6)
    assert c.se == pytest.approx(math.sqrt(93) / 6)  # 1.6073
    # without the correction it would be Miller's √62 / 6: the factor is exactly √(3/2)
    assert c.se / (math.sqrt(62) / 6) == pytest.approx(math.sqrt(3 / 2))


def test_clustered_se_two_tasks_by_hand() -> None:
    c = clustered_se([0.2, 0.4, 0.0, 0.9, 0.7], ["a", "a", "a", "b", "b"])
    # m = 2.2 / 5 = 0.44; sums of deviations -0.72 and +0.72: 2 · 0.5184 = 1.0368
    # times 2/1, over N² = 25: 0.082944 -> SE 0.288
    assert c.mean == pytest.approx(0.44) and c.se == pytest.approx(0.288)


def test_clustered_se_reduces_to_known_cases() -> None:
    xs = [0.1, 0.5, 0.3, 0.9]
    # one run per task: the ordinary SE
    assert clustered_se(xs, ["a", "b", "c", "d"]).se == pytest.approx(mean_se(xs)[1])
    # equal runs per task: the SE over the task means
    balanced = clustered_se(xs, ["a", "a", "b", "b"])
    assert balanced.se == pytest.approx(task_mean_se(xs, ["a", "a", "b", "b"]).se)
    assert balanced.se == pytest.approx(abs(0.3 - 0.6) / 2)  # two means: |a - b| / 2


def test_one_task_has_no_clustered_se_not_zero() -> None:
    for f in (clustered_se, task_mean_se):
        c = f([0.1, 0.5, 0.9], ["a", "a", "a"])
        assert c.mean == pytest.approx(0.5) and (c.tasks, c.runs) == (1, 3)
        assert math.isnan(c.se)
    assert math.isnan(clustered_se([], []).mean)


def test_missing_scores_are_dropped_with_their_task() -> None:
    c = clustered_se([1.0, None, math.nan, 3.0], ["a", "a", "b", "c"])  # type: ignore[list-item]
    assert (c.tasks, c.runs) == (2, 2) and c.mean == 2.0
    with pytest.raises(ValueError):
        clustered_se([1.0], ["a", "b"])


def test_task_mean_se_by_hand() -> None:
    c = task_mean_se(VALUES, TASKS)
    # task means 1.5, 3, 6: mean 3.5; deviations -2, -0.5, 2.5 -> squares sum 10.5
    # sd² = 10.5 / 2 = 5.25; SE = √(5.25 / 3) = √1.75
    assert (c.mean, c.tasks, c.runs) == (3.5, 3, 6)
    assert c.se == pytest.approx(math.sqrt(1.75))


@pytest.mark.parametrize(
    ("p", "dof", "printed"),
    [  # two-sided 95% and 90% critical values from printed t tables
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 3, 3.182),
        (0.975, 5, 2.571),
        (0.975, 6, 2.447),
        (0.975, 10, 2.228),
        (0.975, 30, 2.042),
        (0.975, 120, 1.980),
        (0.95, 1, 6.314),
        (0.95, 10, 1.812),
        (0.995, 4, 4.604),
    ],
)
def test_t_quantile_matches_the_tables(p: float, dof: int, printed: float) -> None:
    assert t_quantile(p, dof) == pytest.approx(printed, abs=5e-4)
    assert t_quantile(1 - p, dof) == pytest.approx(-t_quantile(p, dof))


def test_t_quantile_closed_forms_and_inverse() -> None:
    for p in (0.6, 0.9, 0.975, 0.999):
        assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-10)
        assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)))
        for dof in (3, 4, 7, 50):
            assert t_cdf(t_quantile(p, dof), dof) == pytest.approx(p, abs=1e-12)
    # many degrees of freedom: the normal's 1.95996
    assert t_quantile(0.975, 100_000) == pytest.approx(1.959985, abs=1e-4)
    for bad in ((0.0, 3), (1.0, 3), (0.5, 0), (0.5, 2.5)):
        with pytest.raises(ValueError):
            t_quantile(*bad)  # type: ignore[arg-type]


def test_paired_difference_by_hand() -> None:
    a = {"t1": 0.5, "t2": 0.8, "t3": 0.3, "t4": 0.9}
    b = {"t1": 0.2, "t2": 0.6, "t3": 0.4, "t5": 0.1}
    d = paired_difference(a, b)
    # differences 0.3, 0.2, -0.1: mean 2/15; Σ(d - m)² = 0.14 - 3·(2/15)² = 13/150
    # sd² = 13/300, SE² = 13/900 -> SE = √13 / 30; t(0.975, 2 dof) = 4.302653
    assert d.per_task == pytest.approx({"t1": 0.3, "t2": 0.2, "t3": -0.1})
    assert d.tasks == 3 and d.left_out == ("t4", "t5")
    assert d.difference == pytest.approx(2 / 15)
    assert d.se == pytest.approx(math.sqrt(13) / 30)
    half = 4.302653 * math.sqrt(13) / 30
    assert (d.ci_low, d.ci_high) == pytest.approx((2 / 15 - half, 2 / 15 + half), abs=1e-6)


def test_paired_difference_with_one_shared_task_has_no_interval() -> None:
    d = paired_difference({"t1": 0.5, "t2": math.nan}, {"t1": 0.2, "t2": 0.3})
    assert d.tasks == 1 and d.difference == pytest.approx(0.3) and d.left_out == ("t2",)
    assert math.isnan(d.se) and math.isnan(d.ci_low) and math.isnan(d.ci_high)


def test_bootstrap_band_is_seeded_and_has_the_right_width() -> None:
    two = task_bootstrap_band([[0.0, 1.0], [1.0, 1.0]])
    # means of two resampled tasks are 0, 0.5 or 1 (chances 1/4, 1/2, 1/4): the 95%
    # band spans 0..1 at the first point; equal values leave no width at the second
    assert two == ([0.0, 1.0], [1.0, 1.0])
    curves = [[float(x), 2.0 * x] for x in range(20)]
    assert task_bootstrap_band(curves) == task_bootstrap_band(curves)  # seeded
    assert task_bootstrap_band(curves, seed=1) != task_bootstrap_band(curves)
    low, high = task_bootstrap_band(curves, resamples=20_000)
    # a mean of 20 draws from 0..19: sd = σ/√20 with σ² = Σ(x - 9.5)²/20 = 33.25;
    # the 95% band is about 9.5 ± 1.96 · 1.289, and twice that for the doubled curve
    sd = math.sqrt(33.25 / 20)
    assert low[0] == pytest.approx(9.5 - 1.96 * sd, abs=0.15)
    assert high[0] == pytest.approx(9.5 + 1.96 * sd, abs=0.15)
    assert (low[1], high[1]) == pytest.approx((2 * low[0], 2 * high[0]), abs=0.3)
    assert all(math.isnan(v) for v in task_bootstrap_band([[0.5, 0.7]])[0])


def test_family_best_of_k_has_bands_over_tasks() -> None:
    rows = [
        ("t1", 1, 0.2),
        ("t1", 2, 0.5),
        ("t1", 3, 0.6),
        ("t2", 1, 0.4),
        ("t2", 2, 0.7),  # t2 has only 2 runs, so k = 3 is left out
    ]
    table = pd.DataFrame(
        [("rebench", t, "m", k, 3, v) for t, k, v in rows],
        columns=["family", "task_id", "label", "k", "n", "best_of_k"],
    )
    out = family_best_of_k(table).set_index("k")
    assert list(out.index) == [1, 2] and set(out["tasks"]) == {2}
    assert out.loc[1, "best_of_k"] == pytest.approx(0.3)
    # two tasks: the resampled means are t1's, t2's or their average
    assert (out.loc[1, "low"], out.loc[1, "high"]) == pytest.approx((0.2, 0.4))
    assert (out.loc[2, "low"], out.loc[2, "high"]) == pytest.approx((0.5, 0.7))
    one = family_best_of_k(table[table["task_id"] == "t1"])
    assert one["low"].isna().all() and one["high"].isna().all()


@pytest.fixture
def two_models(tmp_path: Path):
    write_two_models(tmp_path)
    return read_runs(tmp_path)


def test_paired_differences_over_shared_tasks(two_models) -> None:
    [row] = paired_differences(two_models).to_dict("records")
    # task means a: t1 0.3, t2 0.9, t3 0.6 (mean 0.6); b: t1 0.1, t2 0.4, t4 0.8 (0.433)
    # a leads; shared t1, t2: differences 0.3 - 0.1 = 0.2 and 0.9 - 0.4 = 0.5
    assert (row["a"], row["b"], row["tasks"]) == ("mockllm/a", "mockllm/b", 2)
    assert row["difference"] == pytest.approx(0.35)
    assert row["mean_a"] - row["mean_b"] == pytest.approx(row["difference"])
    assert (row["mean_a"], row["mean_b"]) == pytest.approx((0.6, 0.25))
    assert row["se"] == pytest.approx(0.15)  # two values: |0.5 - 0.2| / 2
    half = 12.7062 * 0.15  # t(0.975, 1 dof)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.35 - half, 0.35 + half), abs=1e-3)
    assert row["left_out"] == ("t3", "t4")
    per_task = paired_task_differences(two_models)
    assert per_task.set_index("task_id")["difference"].to_dict() == pytest.approx(
        {"t1": 0.2, "t2": 0.5}
    )


def test_paperbench_categories_over_papers_are_clustered_by_paper(tmp_path: Path) -> None:
    # Code Development: paper-a runs 1/3 and 1, paper-b runs 0, 2/3, 2/3
    trees = {
        "paper-a": [_tree(1, 0, 0, 1), _tree(1, 1, 1, 0)],
        "paper-b": [_tree(0, 0, 0, 0), _tree(0, 0, 1, 0), _tree(0, 0, 1, 0)],
    }
    samples = [
        Sample(task_id=p, epoch=e, normalized=0.5, score_metadata={"graded_tree": t})
        for p, ts in trees.items()
        for e, t in enumerate(ts, 1)
    ]
    write_log(tmp_path, samples, family="paperbench")
    cats = paperbench_categories(read_runs(tmp_path))
    dev = cats[(cats["paper"] == "all") & (cats["category"] == "Code Development")].iloc[0]
    # m = (1/3 + 1 + 0 + 2/3 + 2/3) / 5 = 8/15; sums of deviations: a 4/3 - 16/15 = 4/15,
    # b 4/3 - 24/15 = -4/15; 2 · 16/225, times C/(C-1) = 2 -> 64/225; √ = 8/15; / N = 8/75
    assert (dev["runs"], dev["papers"]) == (5, 2)
    assert dev["mean"] == pytest.approx(8 / 15)
    assert dev["se"] == pytest.approx(8 / 75)
    one = cats[(cats["paper"] == "paper-a") & (cats["category"] == "Code Development")]
    assert one["se"].iloc[0] == pytest.approx(statistics.stdev([1 / 3, 1]) / math.sqrt(2))


def test_researchcodebench_ablation_is_paired_over_papers(tmp_path: Path) -> None:
    family = "researchcodebench"
    # with the paper: p passes 3 of 4 lines (75%), q 4 of 4 (100%); without: 25%, 100%
    with_paper = [_snippet("p", "a", 3, True), _snippet("p", "b", 1, False, failure="syntax")]
    with_paper += [_snippet("q", "a", 1, True), _snippet("q", "b", 3, True)]
    without = [_snippet("p", "a", 3, False, failure="syntax"), _snippet("p", "b", 1, True)]
    without += [_snippet("q", "a", 1, True), _snippet("q", "b", 3, True)]
    write_log(tmp_path, with_paper, family=family, eval_metadata={"with_paper": True})
    write_log(tmp_path, without, family=family, eval_metadata={"with_paper": False})
    rows = researchcodebench_ablation(read_runs(tmp_path)).set_index("paper")
    # differences 50 and 0 points: mean 25, SE |50 - 0| / 2 = 25, t(0.975, 1) = 12.706
    assert rows.loc["all", "difference"] == pytest.approx(25.0)
    assert rows.loc["all", "se"] == pytest.approx(25.0)
    assert rows.loc["all", "ci_high"] == pytest.approx(25 + 12.7062 * 25, abs=0.01)

"""Per-task summaries, the leaderboard and reliability, by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from labcoat.analysis import leaderboard, read_runs, reliability, task_summary

from ._synthetic import Sample, write_log


@pytest.fixture
def data(tmp_path: Path):
    write_log(
        tmp_path,
        [
            Sample(task_id="a", epoch=1, normalized=0.2),
            Sample(task_id="a", epoch=2, normalized=0.4),
            Sample(task_id="a", epoch=3, error="crashed"),
            Sample(task_id="a", epoch=4, normalized=1.2),
            Sample(task_id="b", epoch=1, normalized=0.5),
            Sample(task_id="b", epoch=2, normalized=0.7),
        ],
    )
    return read_runs(tmp_path)


def test_errored_runs_count_as_zero_and_are_counted(data) -> None:
    a = task_summary(data).set_index("task_id").loc["a"]
    # scores 0.2, 0.4, 0 (errored), 1.2: mean 0.45; squared deviations sum to 0.83
    assert (a["runs"], a["errors"]) == (4, 1)
    assert a["mean"] == pytest.approx(0.45)
    assert a["se"] == pytest.approx(math.sqrt(0.83 / 3) / 2)
    assert (a["min"], a["max"]) == (0.0, 1.2)
    assert a["mean_scored"] == pytest.approx(0.6)
    assert a["beat_reference_rate"] == pytest.approx(1 / 3)  # of the scored runs
    assert a["improved_rate"] == 1.0  # every scored run above the start


def test_dropping_errors_is_explicit_and_still_counts_them(data) -> None:
    a = task_summary(data, errors_as="drop").set_index("task_id").loc["a"]
    assert a["mean"] == pytest.approx(0.6) and a["errors"] == 1 and a["min"] == 0.2
    with pytest.raises(ValueError):
        task_summary(data, errors_as="ignore")  # type: ignore[arg-type]


def test_leaderboard_weighs_tasks_equally(data) -> None:
    [row] = leaderboard(data).to_dict("records")
    assert row["tasks"] == 2 and row["runs"] == 6 and row["errors"] == 1
    assert row["mean"] == pytest.approx((0.45 + 0.6) / 2)
    # the SE is over the two task means, 0.45 and 0.6: sd = 0.15 / √2, over √2 -> 0.075
    # (the runs' own spread enters through the task means, not as 6 independent samples)
    assert row["se"] == pytest.approx(0.075)


def test_leaderboard_has_no_se_over_one_task(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(epoch=e, normalized=s) for e, s in enumerate([0.1, 0.5, 0.9], 1)])
    [row] = leaderboard(read_runs(tmp_path)).to_dict("records")
    assert (row["tasks"], row["runs"]) == (1, 3) and row["mean"] == pytest.approx(0.5)
    assert math.isnan(row["se"])  # undefined, never 0 (the runs' SE would be 0.231)


def test_reliability_names_the_gap(tmp_path: Path) -> None:
    scores = [0.0, 0.0, 0.1, 0.9]
    write_log(tmp_path, [Sample(epoch=i + 1, normalized=s) for i, s in enumerate(scores)])
    [row] = reliability(read_runs(tmp_path)).to_dict("records")
    assert row["mean"] == pytest.approx(0.25) and row["best"] == 0.9
    assert row["gap"] == pytest.approx(0.65)
    assert row["mean_over_best"] == pytest.approx(0.25 / 0.9)
    assert row["half_best_rate"] == 0.25  # only the best run reaches 0.45
    assert row["zero_rate"] == 0.5
    assert row["k"] == 4 and row["best_of_k"] == 0.9
    [row] = reliability(read_runs(tmp_path), k=2).to_dict("records")
    # pairs: maxima 0, .1, .9, .1, .9, .9 -> 2.9 / 6
    assert row["best_of_k"] == pytest.approx(2.9 / 6)

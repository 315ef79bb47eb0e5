"""Samples a run's budget did not let start (`not started: budget: ...`, logged by Inspect
as errored samples) are no runs, no errors and no scores in analysis and the report:
they are counted as not started and listed with their reason, as the CLI tables do."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from labcoat._run._budget import NOT_STARTED
from labcoat.analysis import leaderboard, read_runs, results_card, task_summary
from labcoat.report import write_report

from ._synthetic import Sample, write_log

MODEL = "mockllm/model"  # the research agent's label
REASON = f"{NOT_STARTED}: $6.15 of $6.00 spent (--budget-usd)"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    write_log(
        tmp_path,
        [
            Sample(task_id="a", epoch=1, normalized=0.3),
            Sample(task_id="a", epoch=2, normalized=0.9),
            Sample(task_id="a", epoch=3, error="OOM killed"),
            Sample(task_id="a", epoch=4, error=REASON),
            Sample(task_id="b", epoch=1, normalized=0.5),
            Sample(task_id="b", epoch=2, error=REASON),
        ],
    )
    # a second agent the budget never let start at all
    write_log(tmp_path, [Sample(task_id="a", error=REASON)], agent="oracle", model="none/none")
    return tmp_path


def test_not_started_runs_are_out_of_runs_errors_and_means(logs: Path) -> None:
    data = read_runs(logs)
    assert len(data.runs) == 4 and set(data.runs["status"]) == {"ok", "error"}
    assert len(data.not_started) == 3
    assert set(data.not_started["status"]) == {"not started"}
    assert set(data.not_started["error"]) == {REASON}  # the reason is kept
    assert data.not_started["normalized"].isna().all()
    assert data.samples["not_started"].sum() == 3 and len(data.samples) == 7

    summary = task_summary(data).set_index(["label", "task_id"])
    a = summary.loc[(MODEL, "a")]
    assert (a["runs"], a["errors"], a["not_started"]) == (3, 1, 1)
    assert a["mean"] == pytest.approx((0.3 + 0.9 + 0.0) / 3)  # the error counts 0, not the rest
    b = summary.loc[(MODEL, "b")]
    assert (b["runs"], b["errors"], b["not_started"], b["mean"]) == (1, 0, 1, 0.5)
    assert ("oracle", "a") not in summary.index  # it has no runs to summarize

    board = leaderboard(data).set_index("label")
    research, oracle = board.loc[MODEL], board.loc["oracle"]
    assert (research["tasks"], research["runs"], research["errors"]) == (2, 4, 1)
    assert research["not_started"] == 2
    assert (oracle["tasks"], oracle["runs"], oracle["errors"], oracle["not_started"]) == (
        0,
        0,
        0,
        1,
    )
    assert math.isnan(oracle["mean"])

    card = dict(results_card(data).sections[0][1])
    assert card["Runs"].startswith("4 (1 errored); 3 not started (budget)")


def test_a_paper_run_leaves_out_its_snippets_that_did_not_start(tmp_path: Path) -> None:
    def snippet(name: str, **kw: object) -> Sample:
        meta = {"researchcodebench": {"paper": "p", "weight": 1}}
        return Sample(task_id="p", sample_id=f"p/x.py::{name}", metadata=meta, **kw)  # type: ignore[arg-type]

    write_log(
        tmp_path,
        [snippet("s1", normalized=1.0), snippet("s2", normalized=0.0), snippet("s3", error=REASON)],
        family="researchcodebench",
    )
    write_log(tmp_path, [snippet("s1", error=REASON)], family="researchcodebench", agent="noop")
    data = read_runs(tmp_path)
    [run] = data.runs.to_dict("records")
    assert (run["status"], run["samples"], run["sample_errors"]) == ("ok", 2, 0)
    assert run["sample_not_started"] == 1
    assert run["normalized"] == pytest.approx(0.5)  # over the two snippets that ran
    [waiting] = data.not_started.to_dict("records")
    assert waiting["agent"] == "noop" and waiting["error"] == REASON


def test_the_report_counts_and_lists_them(logs: Path) -> None:
    html = write_report(logs, logs / "r.html").read_text()
    assert "4 runs · 1 errored · 3 not started · " in html  # the header
    board = html[
        html.index('id="leaderboard"') : html.index("</section>", html.index('id="leaderboard"'))
    ]
    assert "<th>not started</th>" in board and "did not let start" in board
    runs = html[html.index('id="runs"') :]
    rows = re.findall(r'<tr class="not-started">.*?</tr>', runs, re.S)
    assert len(rows) == 3 and all(REASON in row for row in rows)
    assert runs.count('<tr class="error">') == 1  # the OOM only


def test_no_not_started_column_without_such_runs(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(normalized=0.5), Sample(epoch=2, error="OOM killed")])
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    assert "<th>not started</th>" not in html and "not-started" not in html.split("</style>")[1]

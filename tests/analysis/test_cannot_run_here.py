"""Runs this machine could not start (`environment unavailable: …`: a GPU, a secret, an
environment it cannot build) are no runs of their task: every table, the report and the
analysis leave them out of every mean and count them apart as "cannot run here", with
one definition (`labcoat._unavailable`). Issue 45's case: `validate gpu` on a CPU machine
beside `validate mini` made the oracle look broken (RE-Bench `0.750 ± 0.250`)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from cli_runner import run_cli_captured
from inspect_ai.log import read_eval_log

from labcoat._run._results import collect_results
from labcoat.analysis import leaderboard, read_runs, results_card, task_summary
from labcoat.report import write_report

from ._synthetic import Sample, write_log

GPU = "the task needs 1 GPU(s); this machine has none"
# as Inspect records the error: the exception's repr
RECORDED = f"LabcoatError('environment unavailable: {GPU}')"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """The oracle scored 1 on three tasks; a fourth (the GPU suite's) cannot run here."""
    for task in ("a", "b", "c"):
        write_log(
            tmp_path, [Sample(task_id=task, normalized=1.0)], agent="oracle", model="none/none"
        )
    write_log(tmp_path, [Sample(task_id="gpu", error=RECORDED)], agent="oracle", model="none/none")
    return tmp_path


def test_the_oracle_is_not_dragged_down_by_a_task_that_cannot_run_here(logs: Path) -> None:
    data = read_runs(logs)
    assert len(data.runs) == 3 and set(data.runs["status"]) == {"ok"}
    [gpu] = data.cannot_run_here.to_dict("records")
    assert (gpu["task_id"], gpu["status"]) == ("gpu", "cannot run here")
    assert gpu["error"] == f"cannot run here: {GPU}"  # one line, not the repr
    [board] = leaderboard(data).to_dict("records")
    assert (board["tasks"], board["runs"], board["errors"], board["cannot_run_here"]) == (
        3,
        3,
        0,
        1,
    )
    assert board["mean"] == 1.0  # was 0.750 ± 0.250: the GPU task counted as an errored 0
    assert "gpu" not in set(task_summary(data)["task_id"])
    card = dict(results_card(data).sections[0][1])
    assert card["Runs"].startswith("3 (0 errored); 1 cannot run here")


def test_a_label_none_of_whose_runs_could_run_has_a_row_of_no_tasks(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(task_id="gpu", error=RECORDED)], agent="noop", model="none/none")
    [board] = leaderboard(read_runs(tmp_path)).to_dict("records")
    assert (board["tasks"], board["runs"], board["errors"], board["cannot_run_here"]) == (
        0,
        0,
        0,
        1,
    )
    assert math.isnan(board["mean"])


def test_the_cli_tables_count_them_apart(logs: Path) -> None:
    results = {r.task_id: r for r in collect_results(_logs(logs))}
    gpu = results["gpu"]
    assert (gpu.runs, gpu.errors, gpu.cannot_run_here) == (0, 0, 1)
    assert gpu.unavailable == GPU and gpu.normalized_mean is None
    assert gpu.to_json()["cannot_run_reasons"] == [GPU]
    assert (results["a"].runs, results["a"].errors, results["a"].normalized_mean) == (1, 0, 1.0)


def test_an_epoch_that_could_not_run_leaves_the_others_mean(tmp_path: Path) -> None:
    write_log(
        tmp_path,
        [
            Sample(task_id="t", epoch=1, normalized=0.8),
            Sample(task_id="t", epoch=2, error="OOM killed"),
            Sample(task_id="t", epoch=3, error=RECORDED),
        ],
    )
    [cli] = collect_results(_logs(tmp_path))
    assert (cli.runs, cli.errors, cli.cannot_run_here) == (2, 1, 1)
    assert cli.normalized_mean == pytest.approx(0.4)  # the OOM counts 0, epoch 3 nothing
    [row] = task_summary(read_runs(tmp_path)).to_dict("records")
    assert (row["runs"], row["errors"], row["cannot_run_here"]) == (2, 1, 1)
    assert row["mean"] == pytest.approx(cli.normalized_mean)


def test_a_paper_is_one_run_in_the_cli_table_as_in_the_report(tmp_path: Path) -> None:
    """ResearchCodeBench: a run is every snippet of one paper in one epoch."""

    def snippet(name: str, epoch: int, **kw: object) -> Sample:
        meta = {"researchcodebench": {"paper": "p", "weight": 1}}
        return Sample(task_id="p", sample_id=f"p/x.py::{name}", epoch=epoch, metadata=meta, **kw)  # type: ignore[arg-type]

    samples = [snippet(n, 1, normalized=1.0) for n in ("s1", "s2")]
    samples += [snippet("s3", 1, error="timeout")]
    samples += [snippet(n, 2, normalized=v) for n, v in (("s1", 1.0), ("s2", 0.0), ("s3", 0.0))]
    write_log(tmp_path, samples, family="researchcodebench")
    [cli] = collect_results(_logs(tmp_path))
    [row] = task_summary(read_runs(tmp_path)).to_dict("records")
    assert (cli.runs, cli.errors, cli.partial) == (row["runs"], row["errors"], row["partial"])
    assert (cli.runs, cli.errors, cli.partial) == (2, 0, 1)
    assert (cli.samples, cli.sample_errors, cli.sample_unit) == (6, 1, "snippets")
    assert cli.normalized_mean == pytest.approx(row["mean"])  # (2/3 + 1/3) / 2
    assert cli.normalized_se == pytest.approx(row["se"])  # over the two runs, not 6 snippets


def test_the_report_counts_and_lists_them(logs: Path) -> None:
    html = write_report(logs, logs / "r.html").read_text()
    assert "3 runs · 0 errored · 1 cannot run here · " in html  # the header
    start = html.index('id="leaderboard"')
    board = html[start : html.index("</section>", start)]
    assert "<th>cannot run here</th>" in board and "in no mean" in board
    runs = html[html.index('id="runs"') :]
    [row] = re.findall(r'<tr class="cannot-run-here">.*?</tr>', runs, re.S)
    assert f"cannot run here: {GPU}" in row and "LabcoatError" not in row
    assert '<tr class="error">' not in runs
    assert "No run could start here" in html and f"gpu (oracle): cannot run here: {GPU}" in html


def test_no_column_without_such_runs(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(normalized=0.5), Sample(epoch=2, error="OOM killed")])
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    assert "<th>cannot run here</th>" not in html and " cannot run here · " not in html


def _logs(folder: Path) -> list:
    return [read_eval_log(str(p)) for p in sorted(folder.glob("*.eval"))]


@pytest.mark.parametrize(
    "message",
    [
        # a METR family's score() failing, its stdout quoted (what the agent's code printed)
        "score() exited with code 4; stdout: environment unavailable: no GPU; stderr: (empty)",
        "LabcoatError('score() exited with code 4; stdout: environment unavailable: no GPU')",
        "grader failed:\nenvironment unavailable: no GPU",
    ],
)
def test_an_error_that_quotes_the_prefix_is_an_error_not_a_run_that_could_not_start(
    tmp_path: Path, message: str
) -> None:
    """Attack: a failing run whose code prints `environment unavailable: …` so that the
    grader's error quotes it, hoping the run is taken for one that could not start and
    left out of the mean. Only labcoat's own `unavailable()` error counts (its message
    begins with the prefix); the control, RECORDED, still does (the tests above)."""
    write_log(
        tmp_path,
        [Sample(task_id="t", epoch=1, normalized=1.0), Sample(task_id="t", epoch=2, error=message)],
    )
    [cli] = collect_results(_logs(tmp_path))
    assert (cli.runs, cli.errors, cli.cannot_run_here) == (2, 1, 0)
    assert cli.normalized_mean == pytest.approx(0.5)  # the failed run counts 0
    [row] = task_summary(read_runs(tmp_path)).to_dict("records")
    assert (row["runs"], row["errors"], row["cannot_run_here"]) == (2, 1, 0)


def test_labcoat_inspect_counts_them_apart(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`labcoat inspect` of a folder with three runs and a sample that could not start:
    three runs inspected, the fourth named apart (it was `4 run(s)`)."""
    code, out, _ = run_cli_captured(capsys, "inspect", str(logs), "--dry-run")
    assert code == 0, out
    assert "3 run(s) in 4 log(s) inspected (1 could not run here: no run to inspect)" in out

"""`labcoat report`: one self-contained HTML file with every run in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labcoat._cli.main import main
from labcoat.analysis import leaderboard, read_human_csv, read_runs
from labcoat.report import write_report

from ._synthetic import Sample, demo_logs, write_log, write_two_models

VIEW = "http://127.0.0.1:7575/#/logs/"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    demo_logs(folder, epochs=2)
    return folder


@pytest.fixture(scope="module")
def report(demo: Path) -> str:
    path = write_report(demo, demo.parent / "report.html", humans=demo / "humans.csv")
    return path.read_text(encoding="utf-8")


def test_the_report_needs_nothing_from_the_network(report: str) -> None:
    assert report.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]+src=|<link\b|<img\b|<iframe\b|@import|url\(", report)
    # the only URLs are links to runs in `inspect view`
    urls = re.findall(r"(?:https?:)?//[^\s\"'<>)]+", report)
    assert urls and all(u.startswith(VIEW) for u in urls), {u for u in urls if VIEW not in u}
    assert all(f'href="{u}' in report for u in set(urls))


def test_every_run_and_leaderboard_row_is_there(demo: Path, report: str) -> None:
    data = read_runs(demo).with_humans(read_human_csv(demo / "humans.csv"))
    runs_table = report.split('id="runs-table"')[1].split("</table>")[0]
    assert runs_table.count("<tr") - 1 == len(data.runs)  # minus the heading row
    board = report.split('id="leaderboard-table"')[1].split("</table>")[0]
    assert board.count("<tr") - 1 == len(leaderboard(data))
    for run_id in data.runs["run"][data.runs["agent"] != "human"]:
        link = data.runs.set_index("run").loc[run_id, "link"]
        assert link.replace("&", "&amp;") in report


def test_family_sections_plots_and_tables(report: str) -> None:
    for section in (
        "family-rebench",
        "family-researchgym",
        "family-paperbench",
        "family-researchcodebench",
        "behaviour",
        "runs",
        "logs",
    ):
        assert f'id="{section}"' in report
    assert report.count('<svg class="plot"') >= 30
    for heading in (
        "Capability and reliability",
        "Score by rubric category",
        "Why snippets failed",
        "With and without the paper",
        "Sub-tasks",
        "Tool calls by phase (equal thirds)",
        "Tool calls by phase (start / ramp / steady)",
        "Action density and score",
    ):
        assert heading in report
    assert "best of k at equal time" in report and "human" in report


def test_errored_runs_are_shown(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(normalized=0.5), Sample(epoch=2, error="OOM killed")])
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    assert '<tr class="error">' in html and "OOM killed" in html
    assert '<span class="bad">1</span>' in html  # the errors column of the leaderboard


def test_the_stopped_by_column_says_what_ended_each_run(tmp_path: Path) -> None:
    stops = ["submitted", "time", "working", "token", "message", "context_overflow"]
    write_log(
        tmp_path,
        [
            Sample(epoch=i + 1, store={"labcoat:stopped_by": {"type": t}})
            for i, t in enumerate(stops)
        ]
        + [Sample(epoch=9, error="ModelCallError: unreadable responses")],
    )
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    cells = re.findall(r'<tr class="(?:ok|error)">(.*?)</tr>', html, re.S)
    labels = {
        "submitted",
        "time limit",
        "working-time limit",
        "token limit",
        "message limit",
        "context overflow",
        "error",
    }
    for label in labels:
        assert any(f"<td>{label}</td>" in row for row in cells), label


def test_cli_writes_the_report_and_shows_progress(demo: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "sub" / "r.html"
    main(
        [
            "report",
            str(demo),
            "-o",
            str(out),
            "--humans",
            str(demo / "humans.csv"),
            "--view-url",
            "http://example.test:9999",
        ]
    )
    captured = capsys.readouterr()
    assert out.is_file() and f"report: {out}" in captured.out
    assert "reading samples" in captured.err and "building" in captured.err
    assert "http://example.test:9999/#/logs/" in out.read_text()


def test_cli_says_when_there_are_no_logs(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert exit_.value.code == 2
    assert "no readable .eval logs found" in capsys.readouterr().err


def test_headline_has_task_clustered_se_counts_and_paired_differences(tmp_path: Path) -> None:
    write_two_models(tmp_path)
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    board = html.split('id="leaderboard-table"')[1].split("</table>")[0]
    text = re.sub(r"<[^>]+>", "", board)
    # a: task means 0.3, 0.9, 0.6 -> sd 0.3, SE 0.3/√3; b: 0.1, 0.4, 0.8 -> SE 0.2028
    assert "0.600 ± 0.173 (3 tasks, 5 runs)" in text
    assert "0.433 ± 0.203 (3 tasks, 4 runs)" in text
    paired = html.split('id="paired-table"')[1].split("</table>")[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", paired)
    # shared t1, t2: a − b = 0.2, 0.5 -> 0.35 ± 0.15, t(0.975, 1) = 12.706
    assert cells[1:] == [
        "mockllm/a",
        "mockllm/b",
        "2",
        "0.600",
        "0.250",
        "0.350",
        "0.150",
        "[-1.556, 2.256]",
        "t3, t4",
    ]
    assert 'href="#paired"' in html and "per-task differences" in html


def test_one_task_shows_no_se_and_says_why(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(epoch=e, normalized=s) for e, s in enumerate([0.1, 0.5], 1)])
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    board = html.split('id="leaderboard-table"')[1].split("</table>")[0]
    assert '0.300 ± <span title="one task: an SE over tasks needs two or more' in board
    assert "(1 task, 2 runs)" in board
    assert 'id="paired"' not in html  # one model: nothing to compare

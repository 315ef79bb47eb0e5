"""A task whose environment cannot be built is reported with pip's reason; the rest run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured

from labcoat.sandbox import _environment

UPSTREAM = Path(__file__).parent / "researchgym" / "data" / "upstream-task"


@pytest.fixture
def two_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_environment, "_failures", {})
    tasks = tmp_path / "tasks"
    shutil.copytree(UPSTREAM, tasks / "fine")
    shutil.copytree(UPSTREAM, tasks / "broken")
    (tasks / "fine" / "requirements.txt").write_text("numpy\n")
    # pip-valid, unreachable offline
    (tasks / "broken" / "requirements.txt").write_text(
        "numpy\ngit+https://labcoat-test.invalid/d4rl.git#egg=d4rl\n"
    )
    return tasks


def test_eval_runs_the_others_and_names_the_reason(
    two_tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli_captured(
        capsys,
        "eval",
        str(two_tasks),
        "--family",
        "researchgym",
        "--agent",
        "noop",
        "--log-dir",
        str(tmp_path / "logs"),
        "--json",
    )
    assert code == 0  # the one that could run here ran; the other is no failure of it
    assert "Traceback" not in out + err
    rows = {row["task"]: row for row in json_document(out)}
    assert rows["fine"]["runs"] == 1 and rows["fine"]["errors"] == 0
    broken = rows["broken"]
    assert broken["errors"] == broken["runs"] == 0 and broken["cannot_run_here"] == 1
    assert broken["unavailable"] is not None
    assert "labcoat-test.invalid" in broken["unavailable"]
    assert "\n" not in broken["unavailable"]


def test_validate_lists_the_unavailable_task_apart(
    two_tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli_captured(
        capsys,
        "validate",
        str(two_tasks),
        "--family",
        "researchgym",
        "--log-dir",
        str(tmp_path / "logs"),
        "--json",
    )
    verdicts = {v["task"]: v for v in json_document(out)}
    # neither declares an oracle: the noop alone is checked ("fine" scores 0 doing
    # nothing); "broken" is only unavailable, not a failure
    assert code == 0, verdicts
    assert verdicts["broken"]["passed"] and verdicts["fine"]["passed"]
    assert verdicts["fine"]["note"] == "no oracle: checks noop only"
    assert verdicts["fine"]["oracle"] is None and verdicts["fine"]["noop"]["raw"] == 0.0
    assert "labcoat-test.invalid" in verdicts["broken"]["unavailable"]
    assert verdicts["fine"]["unavailable"] is None
    assert "Traceback" not in out + err


def test_validate_table_says_no_oracle(
    two_tasks: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the table's cells unwrapped
    shutil.rmtree(two_tasks / "broken")
    code, out, err = run_cli_captured(
        capsys,
        "validate",
        str(two_tasks),
        "--family",
        "researchgym",
        "--log-dir",
        str(tmp_path / "logs"),
    )
    assert code == 0, out + err
    assert "no oracle: checks noop only" in out
    assert "0.000 (raw)" in out


def test_eval_table_prints_the_reason_as_text(
    two_tasks: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reason names the requirements file in brackets: printed, not read as markup."""
    monkeypatch.setenv("COLUMNS", "400")
    code, out, err = run_cli_captured(
        capsys,
        "eval",
        str(two_tasks),
        "--family",
        "researchgym",
        "--agent",
        "noop",
        "--log-dir",
        str(tmp_path / "logs"),
    )
    assert code == 0
    assert "Traceback" not in out + err
    assert "cannot run here: " in out and "requirements.txt]" in out

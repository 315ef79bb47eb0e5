"""A re-run says what it resumes (issue 45, item 4): `resuming: N of M samples already done
in LOGDIR`, N counting each sample that finished without error once, however many logs
(an interrupted one, its retry) hold it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from labcoat._run._resume import resume_line
from tests.analysis._synthetic import Sample, write_log


def _tasks(*sizes: int, epochs: int | None = None) -> list[SimpleNamespace]:
    return [SimpleNamespace(dataset=list(range(n)), epochs=epochs) for n in sizes]


def test_a_first_run_says_nothing(tmp_path: Path) -> None:
    assert resume_line(str(tmp_path), _tasks(10), None) is None


def test_a_rerun_counts_each_finished_sample_once(tmp_path: Path) -> None:
    done = [Sample(sample_id=f"s{i}") for i in range(3)]
    failed = Sample(sample_id="s3", error="the sandbox died")
    write_log(tmp_path, [*done[:2], failed], status="cancelled", task_identity="rcb")
    write_log(tmp_path, [done[1], done[2]], status="cancelled", task_identity="rcb")  # retry
    line = resume_line(str(tmp_path), _tasks(10), None)
    assert line == f"resuming: 3 of 10 samples already done in {tmp_path}"


def test_the_plan_counts_epochs_and_the_sample_limit(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(sample_id="s0")], status="cancelled")
    assert resume_line(str(tmp_path), _tasks(10, 4), 2).startswith("resuming: 1 of 28 ")
    assert resume_line(str(tmp_path), _tasks(10, epochs=3), None).startswith("resuming: 1 of 30 ")
    assert resume_line(str(tmp_path), _tasks(10), None, limit=5).startswith("resuming: 1 of 5 ")
    assert resume_line(str(tmp_path), _tasks(10), None, limit=(2, 6)).startswith(
        "resuming: 1 of 4 "
    )

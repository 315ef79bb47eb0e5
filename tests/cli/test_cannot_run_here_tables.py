"""`eval`'s and `validate`'s tables and exit codes: a task this machine cannot run is
`cannot run here: <reason>`, counted apart and in no mean; `validate` that could validate
nothing says so and exits 3; a ResearchCodeBench run is a paper (its snippets named), as
in the report; the eval table names the model; validate's output is its own table."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import run_cli_captured
from inspect_ai.log import read_eval_log

from labcoat._cli._tables import print_results
from labcoat._cli.validate_cmd import exit_code, summary_line
from labcoat._run._results import collect_results, run_exit_code
from labcoat._run._validate import judge
from labcoat._unavailable import EXIT_NOTHING_RAN
from labcoat.families import TaskEntry
from labcoat.suites import SUITES_DIR
from tests.analysis._synthetic import Sample, write_log

GPU = "the task needs 1 GPU(s); this machine has none"
RECORDED = f"LabcoatError('environment unavailable: {GPU}')"


def _results(folder: Path) -> list:
    return collect_results([read_eval_log(str(p)) for p in sorted(folder.glob("*.eval"))])


def test_the_eval_table_names_the_model_the_unit_and_what_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snippets = [
        Sample(
            task_id="p",
            sample_id=f"p/x.py::s{i}",
            metadata={"researchcodebench": {"paper": "p", "weight": 1}},
            **({"error": "timeout"} if i == 3 else {"normalized": 1.0}),  # type: ignore[arg-type]
        )
        for i in range(1, 4)
    ]
    write_log(tmp_path, snippets, family="researchcodebench", model="openai/gpt-5")
    write_log(tmp_path, [Sample(task_id="gpu", error=RECORDED)], model="openai/gpt-5")
    capsys.readouterr()
    print_results(_results(tmp_path), "labcoat eval")
    out = capsys.readouterr().out
    assert "│ model" in out.replace("┃", "│") and "openai/gpt-5" in out
    assert "1 (3 snippets)" in out  # one run of the paper, as the report counts it
    assert "1 of 3 snippets errored" in out
    assert f"cannot run here: {GPU}" in out
    assert "1 task(s) cannot run here" in out


def test_eval_exits_0_when_the_rest_ran_and_3_when_nothing_could(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(task_id="gpu", error=RECORDED)])
    nothing = _results(tmp_path)
    assert run_exit_code(True, nothing) == EXIT_NOTHING_RAN
    write_log(tmp_path, [Sample(task_id="a", normalized=0.5)])
    assert run_exit_code(True, _results(tmp_path)) == 0
    assert run_exit_code(False, _results(tmp_path)) == 1


def _entry(task: str) -> TaskEntry:
    return TaskEntry(task, "rebench", task, 1, Path("."))


def test_validate_that_validated_nothing_says_so_and_exits_3(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(task_id="gpu", error=RECORDED)], agent="oracle")
    write_log(tmp_path, [Sample(task_id="gpu", error=RECORDED)], agent="noop")
    verdicts = judge([_entry("gpu")], _results(tmp_path))
    assert verdicts[0].unavailable == GPU and verdicts[0].passed
    assert exit_code(verdicts) == EXIT_NOTHING_RAN
    line = summary_line(verdicts)
    assert line.startswith("nothing was validated on this machine: 1 cannot run here")
    assert GPU in line

    write_log(tmp_path, [Sample(task_id="a", normalized=1.0)], agent="oracle")
    write_log(tmp_path, [Sample(task_id="a", normalized=0.0)], agent="noop")
    verdicts = judge([_entry("gpu"), _entry("a")], _results(tmp_path))
    assert exit_code(verdicts) == 0
    assert summary_line(verdicts) == (
        "1 task(s) validated: 1 passed, 0 failed; not validated: 1 cannot run here"
    )


def test_validate_prints_its_own_table_and_no_errors_column_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], declare_gpus: Callable[[int], None]
) -> None:
    task = tmp_path / "gym" / "class-incremental"
    shutil.copytree(SUITES_DIR / "mini" / "researchgym" / "class-incremental", task)
    sidecar = task / "labcoat.yaml"
    sidecar.write_text(
        sidecar.read_text().replace(
            "resources: {memory_gb: 2}", "resources: {memory_gb: 2, gpus: 1}"
        )
    )
    declare_gpus(0)
    code, out, err = run_cli_captured(
        capsys, "validate", str(task.parent), "--log-dir", str(tmp_path / "logs")
    )
    assert code == EXIT_NOTHING_RAN, out + err
    assert "nothing was validated on this machine" in out
    assert "cannot run here" in out and "errors column" not in out
    # Inspect's per-task panels are left out: the verdicts' table is the output
    assert "total time:" not in out + err and "╭" not in out + err
    assert "Traceback" not in out + err

"""METR's task bridge's own test families (tests/test_tasks), from a checkout named by
LABCOAT_METR_TASK_BRIDGE (skipped, with the reason, when unset), run as they are:

- `test_output_limit_task_family`: its manifest lists 5 of get_tasks()'s 7 tasks; all 7
  are tasks, and each scores 1.0 although score() prints 11 MB.
- `test_scoring_output_task_family`: score() that exits non-zero is a sample error
  carrying the exit code, with its stdout and stderr kept (the bridge's
  test_sandbox_task_driver_score_nonzero_exit_code); exit 0 is a score.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured
from inspect_ai import eval
from scripted import scripted

from labcoat.families.rebench import rebench
from labcoat.families.rebench._scoring import SCORING_ERROR

BRIDGE = os.environ.get("LABCOAT_METR_TASK_BRIDGE")
pytestmark = pytest.mark.skipif(
    not BRIDGE, reason="set LABCOAT_METR_TASK_BRIDGE to a checkout of METR/inspect-metr-task-bridge"
)

OUTPUT_LIMIT = "test_output_limit_task_family"
SCORING_OUTPUT = "test_scoring_output_task_family"


def _fixture(name: str, root: Path) -> Path:
    shutil.copytree(Path(str(BRIDGE)) / "tests" / "test_tasks" / name, root / name)
    return root


def test_output_limit_runs_all_seven_tasks(tmp_path: Path, capsys) -> None:
    target = _fixture(OUTPUT_LIMIT, tmp_path / "target")
    code, out, err = run_cli_captured(capsys, "list", str(target), "--json")
    assert code == 0, err
    ids = [e["id"].split("/", 1)[1] for e in json_document(out)]
    assert ids == [
        "small_output",
        "large_stdout",
        "large_stderr",
        "large_stdout_med_stderr",
        "med_out_large_stderr",
        "large_both",
        "subprocess_output",
    ]
    [log] = eval(
        rebench(target=str(target), agent="noop"),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    samples = {s.metadata["task_name"]: s for s in log.samples or []}
    assert sorted(samples) == sorted(ids)
    for name, sample in samples.items():
        assert sample.error is None, (name, sample.error)
        assert sample.scores["rebench_scorer"].value["raw"] == 1.0, name


@pytest.mark.parametrize(
    ("task", "stdout", "stderr", "code"),
    [
        ("nada", "", "", 0),
        ("stdout_stderr_zero", "Hi there!", "Oh no!", 0),
        ("non_zero", "", "", 1),
        ("stdout_non_zero", "Hi there!", "", 2),
        ("stderr_non_zero", "", "Oh no!", 3),
        ("stdout_stderr_non_zero", "Hi there!", "Oh no!", 4),
    ],
)
def test_scoring_output_non_zero_exit_is_an_error(
    tmp_path: Path, task: str, stdout: str, stderr: str, code: int
) -> None:
    target = _fixture(SCORING_OUTPUT, tmp_path / "target")
    [log] = eval(
        rebench(target=str(target), tasks=f"{SCORING_OUTPUT}/{task}", agent="noop"),
        solver=scripted(("submit", "1")),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    [sample] = log.samples or []
    if code == 0:
        assert sample.error is None, sample.error
        score = sample.scores["rebench_scorer"]
        assert score.value["raw"] == 1.0
        assert stdout in score.metadata["scorer_output"]
        return
    assert sample.error is not None and f"exited with code {code}" in sample.error.message
    assert "\n" not in sample.error.message
    # the error's one line has all three, as the bridge's own test expects
    streams = f"stdout: {stdout or '(empty)'}; stderr: {stderr or '(empty)'}"
    assert f"exited with code {code}; {streams}" in sample.error.message
    kept = sample.store[SCORING_ERROR]
    assert (kept["exit_code"], kept["stdout"].strip(), kept["stderr"].strip()) == (
        code,
        stdout,
        stderr,
    )

"""Against a checkout of upstream ResearchGym (github.com/Anikethh/ResearchGym), as cloned.

Set LABCOAT_RESEARCHGYM_UPSTREAM to the repository's root to run these; without it they
are skipped, with that reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from cli_runner import run_cli_captured
from inspect_ai import eval, task_with
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from labcoat._run._check import check_entries
from labcoat.families.researchgym import TaskFolder, discover, researchgym, summarize
from labcoat.families.researchgym._extract import filled_method_rows
from labcoat.families.researchgym._folder import DESCRIPTION
from labcoat.families.researchgym._grading import GraderRun
from labcoat.families.researchgym._scoring import _files_to_read, raw_values, score_run
from labcoat.sandbox import machine_has_gpu
from researchgym._upstream_logs import grader_args, plant_results

ROOT = os.environ.get("LABCOAT_RESEARCHGYM_UPSTREAM")
pytestmark = pytest.mark.skipif(
    not ROOT, reason="LABCOAT_RESEARCHGYM_UPSTREAM (a ResearchGym checkout) is not set"
)
TEST_SPLIT = Path(ROOT or ".") / "tasks" / "test"
TASKS = [
    "continual-learning",
    "cross-modal-retrieval",
    "improving-replay-buffers",
    "materials-tokenization",
    "time-series-explanation",
]


# the paper's sub-task counts
SUBTASKS = {
    "continual-learning": 6,
    "cross-modal-retrieval": 14,
    "improving-replay-buffers": 9,
    "materials-tokenization": 12,
    "time-series-explanation": 7,
}


def test_every_test_task_lists_with_its_subtasks() -> None:
    entries = {e.id: e for e in discover(TEST_SPLIT)}
    for name in TASKS:
        entry = entries.pop(name)
        assert entry.problem is None
        assert entry.extra["sidecar"] == f"overlay {name}.yaml", entry.extra.get("overlay")
        assert entry.extra["subtasks"] == SUBTASKS[name]
        assert entry.extra["subtasks"] >= entry.extra["primary_subtasks"] >= 1
        assert not entry.has_oracle
    # upstream's test split also holds a folder without task_description.md: reported
    for name, entry in entries.items():
        assert entry.problem is not None, name
        assert DESCRIPTION in entry.problem


@pytest.mark.parametrize("name", TASKS)
def test_untouched_results_table_scores_zero(name: str) -> None:
    folder = TaskFolder(TEST_SPLIT / name)
    assert folder.sidecar is not None
    description = folder.description()
    run = GraderRun(
        "bash grading/grade.sh", "/run", 0, False, 1.0, "", "", True, {DESCRIPTION: description}
    )
    raws = raw_values(folder.sidecar, run)
    assert all(v is None for v in raws.values()), raws
    summary = summarize(folder.sidecar, raws)
    assert summary.normalized == 0.0 and summary.completion_rate == 0.0
    filled, rows = filled_method_rows(description)
    assert filled == 0 and rows >= 1


def test_overlays_match_the_descriptions_tables() -> None:
    script = Path(__file__).parents[2] / "scripts" / "researchgym_overlays.py"
    result = subprocess.run(
        [sys.executable, str(script), str(TEST_SPLIT), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_list_names_the_broken_folder(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli_captured(capsys, "list", str(TEST_SPLIT), "--json")
    assert code == 2  # a folder of the target cannot be loaded
    listed = {e["id"]: e for e in json.loads(out)}
    for name in TASKS:
        assert listed[name]["subtask_ids"] and listed[name]["primary_subtask_ids"]
    assert "interpreting-diffusion-transformers" in err
    assert "Traceback" not in out + err


def test_preflight_without_building() -> None:
    entries = [e for e in discover(TEST_SPLIT)]
    problems = anyio.run(check_entries, entries, False).problems
    kinds = {(p.task, p.kind) for p in problems}
    for name in TASKS:
        assert (name, "sidecar") not in kinds and (name, "overlay") not in kinds
        assert ((name, "gpu") in kinds) == (not machine_has_gpu())
    assert ("interpreting-diffusion-transformers", "load") in kinds
    # upstream's materials-tokenization grader imports a module its folder lacks
    graders = [p.message for p in problems if p.kind == "grader"]
    assert any("ner_datasets.py is missing" in m for m in graders), graders


# the paper's primary-metric baseline and SOTA per task
PAPER = {
    "continual-learning": (88.5, 90.3),
    "cross-modal-retrieval": (57.2, 59.2),
    "improving-replay-buffers": (3395.2, 4101.8),
    "materials-tokenization": (86.1, 87.8),
    "time-series-explanation": (0.4, 0.5),
}


def grade_planted(name: str, value: float, tmp_path: Path) -> GraderRun:
    """Upstream's grader, run on a copy of the task where an agent's runs left logs that
    report `value`; read back as labcoat's grading reads a run (the overlay's files)."""
    folder = tmp_path / name
    shutil.copytree(TEST_SPLIT / name, folder)
    plant_results(name, folder, value)
    sidecar = TaskFolder(TEST_SPLIT / name).sidecar
    assert sidecar is not None
    command = sidecar.grading.command.replace("$PWD", str(folder))
    python = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{python}:{os.environ['PATH']}"}
    for leftover in ("METHOD_NAME", "REAL_EXPLAINER", "SEEDS"):  # read by upstream graders
        env.pop(leftover, None)
    args = " ".join(grader_args(name, folder))
    result = subprocess.run(
        f"{command} {args}",
        shell=True,
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    files = {}
    for relative in _files_to_read(sidecar):
        path = folder / relative
        files[relative] = path.read_text(encoding="utf-8") if path.is_file() else None
    return GraderRun(
        command,
        str(folder),
        result.returncode,
        False,
        1.0,
        result.stdout,
        result.stderr,
        True,
        files,
    )


@pytest.mark.parametrize("name", TASKS)
def test_the_papers_numbers_in_the_agents_logs_score_on_the_papers_scale(
    name: str, tmp_path: Path
) -> None:
    """Logs reporting the paper's baseline give normalized = baseline / SOTA and do not beat
    the baseline; logs reporting its SOTA give 1.0 (through upstream's own grader)."""
    baseline, sota = PAPER[name]
    folder = TaskFolder(TEST_SPLIT / name)
    at_baseline = grade_planted(name, baseline, tmp_path / "baseline")
    score = score_run(folder, at_baseline)
    assert isinstance(score.value, dict), at_baseline.stderr
    assert score.value["normalized"] == pytest.approx(baseline / sota, abs=1e-9)
    if name == "continual-learning":
        assert round(score.value["normalized"], 3) == 0.980  # 88.5 / 90.3
    assert score.value["improved"] == 0.0 and score.value["primary"] == pytest.approx(baseline)
    assert 0 < score.value["completion_rate"] < 1 and score.value["self_reported"] == 1.0
    at_sota = score_run(folder, grade_planted(name, sota, tmp_path / "sota"))
    assert isinstance(at_sota.value, dict)
    assert at_sota.value["normalized"] == pytest.approx(1.0, abs=1e-9)
    assert at_sota.value["improved"] == 1.0


def cifar_log(i: int, seed: int) -> str:
    """One run's log, in the format upstream's continual-learning grader parses."""
    return f"seed: {seed}\n" + "".join(
        f"CNN: {{'total': {80 + task * 0.5 + i:.2f}, '00-09': 90.0}}\n"
        f"Average Accuracy (CNN): {88 + task * 0.3 + i:.2f}\n"
        for task in range(10)
    )


@solver
def logs_cifar_runs() -> Solver:
    """Leaves a log per seed, as upstream's starting code writes them."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for i, seed in enumerate((1992, 1993, 1994)):
            path = f"/home/agent/work/logs/cifar100_seed{seed}.log"
            await sandbox().write_file(path, cifar_log(i, seed))
        return state

    return solve


@pytest.mark.slow
def test_upstream_grader_output_reaches_the_subtasks(
    tmp_path: Path, declare_gpus: Callable[[int], None]
) -> None:
    """Upstream's own grader, in its own environment (built from PyPI: slow the first
    time), fills the CIFAR-100 row; the overlay reads both of its values."""
    # the overlay asks for a GPU: declared, so that it runs here too (on the CPU)
    declare_gpus(1)
    task = task_with(
        researchgym(target=str(TEST_SPLIT), tasks="continual-learning", agent="noop"),
        solver=logs_cifar_runs(),
    )
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.samples is not None
    [sample] = log.samples
    assert sample.error is None, sample.error.message
    score = next(iter((sample.scores or {}).values()))
    assert isinstance(score.value, dict) and score.metadata is not None
    # the mean over the three seeds of the last task's values
    assert score.value["raw/cifar100.acc"] == pytest.approx(85.5)
    assert score.value["raw/cifar100.aaa"] == pytest.approx(91.7)
    assert score.value["normalized"] == pytest.approx(85.5 / 90.3)  # the paper's SOTA
    assert score.value["completion_rate"] == pytest.approx(1 / 6)
    assert score.value["improved"] == 0.0 and score.value["self_reported"] == 1.0

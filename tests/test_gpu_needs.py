"""ResearchGym tasks and PaperBench reproductions that need GPUs this machine cannot lend
are unavailable with the reason, and nothing is built for them; where the GPUs are there
(or, under Ray, a reproduction is placed on a node that has them) they run, and a
reproduction's own GPU time is counted in its run's."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured
from inspect_ai.log import EvalSample, read_eval_log

from labcoat._unavailable import EXIT_NOTHING_RAN
from labcoat.analysis import read_runs
from labcoat.families._gpu_need import GPU_UNAVAILABLE
from labcoat.families.paperbench import paperbench
from labcoat.families.researchgym import researchgym
from labcoat.grading import Reservation, sample_reservation
from labcoat.sandbox import GPUS_KEY, GRADER_GPUS_KEY, PythonEnv
from labcoat.suites import SUITES_DIR

MINI = SUITES_DIR / "mini"


def _gpu_task(tmp_path: Path) -> Path:
    """The mini class-incremental task, asking for one GPU."""
    task = tmp_path / "gym" / "class-incremental"
    shutil.copytree(MINI / "researchgym" / "class-incremental", task)
    sidecar = task / "labcoat.yaml"
    text = sidecar.read_text()
    assert "resources: {memory_gb: 2}" in text
    sidecar.write_text(
        text.replace("resources: {memory_gb: 2}", "resources: {memory_gb: 2, gpus: 1}")
    )
    return task.parent


def test_a_researchgym_task_needing_a_gpu(
    tmp_path: Path, declare_gpus: Callable[[int], None]
) -> None:
    target = str(_gpu_task(tmp_path))
    declare_gpus(0)
    [sample] = researchgym(target=target, agent="noop").dataset
    assert sample.metadata[GPU_UNAVAILABLE] == "the task needs 1 GPU(s); this machine has none"
    config = sample.sandbox.config
    assert (config.gpus, config.environment) == (0, PythonEnv())  # nothing to build
    declare_gpus(1)
    [sample] = researchgym(target=target, agent="noop").dataset
    assert GPU_UNAVAILABLE not in sample.metadata
    assert sample.sandbox.config.gpus == 1 and sample.sandbox.config.environment != PythonEnv()


def test_a_paperbench_reproduction_needing_a_gpu(declare_gpus: Callable[[int], None]) -> None:
    declare_gpus(0)
    [sample] = paperbench(agent="oracle", tasks="tail-averaged-sgd", reproduce_gpus=1).dataset
    reason = "the reproduction needs 1 GPU(s); this machine has none"
    assert sample.metadata[GPU_UNAVAILABLE] == reason
    assert sample.sandbox.config.environment == PythonEnv()
    # a Ray sample holding no GPU: its reproduction is placed on a node that has one
    with sample_reservation(Reservation(cpus=1, memory_mb=1024, gpus=0)):
        [placed] = paperbench(agent="oracle", tasks="tail-averaged-sgd", reproduce_gpus=1).dataset
    assert GPU_UNAVAILABLE not in placed.metadata
    declare_gpus(1)
    [here] = paperbench(agent="oracle", tasks="tail-averaged-sgd", reproduce_gpus=1).dataset
    assert GPU_UNAVAILABLE not in here.metadata


def test_validate_and_check_name_the_missing_gpu(
    tmp_path: Path,
    declare_gpus: Callable[[int], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    declare_gpus(0)
    target = str(_gpu_task(tmp_path))
    code, out, _ = run_cli_captured(capsys, "check", target, "--no-build")
    assert code == 2 and "gpu: needs 1 GPU(s); this machine has none" in out
    code, out, _ = run_cli_captured(
        capsys, "validate", target, "--json", "--log-dir", str(tmp_path / "logs")
    )
    [verdict] = json_document(out)
    # no failure, but nothing could be validated here
    assert code == EXIT_NOTHING_RAN and verdict["passed"], verdict
    assert verdict["unavailable"] == "the task needs 1 GPU(s); this machine has none"


def _paper_needing_a_gpu(
    agent: str, logs: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict, EvalSample]:
    """The mini paper tail-averaged-sgd, its reproduction asking for one GPU: the run's
    row and its one sample."""
    code, out, err = run_cli_captured(
        capsys, "eval", "mini", "--family", "paperbench", "--task", "tail-averaged-sgd",
        "--agent", agent, "-T", "reproduce_gpus=1", "--no-inspect", "--json",
        "--log-dir", str(logs),
    )  # fmt: skip
    assert code == 0, err[-3000:]
    [row] = json_document(out)
    [sample] = read_eval_log(str(next(logs.rglob("*.eval")))).samples
    return row, sample


def test_a_reproduction_s_own_gpu_is_accounted(
    fake_gpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    row, sample = _paper_needing_a_gpu("oracle", logs, capsys)
    assert (row["errors"], row["normalized"]) == (0, 1.0)
    assert GPUS_KEY not in sample.store  # the agent's sandbox asked for none
    # the reproduction and its re-seeded rerun each took one GPU of the pool
    held = sample.store[GRADER_GPUS_KEY]
    assert len(held) == 2 and all(len(r["ids"]) == 1 and r["held_seconds"] > 0 for r in held)
    [run] = read_runs(logs).runs.to_dict("records")
    assert run["gpus"] == 1
    assert run["gpu_seconds"] == pytest.approx(sum(r["gpu_seconds"] for r in held))
    assert run["gpu_peak_memory_mib"] == max(r["peak_memory_mib"] for r in held)


def test_a_submission_without_reproduce_sh_takes_no_gpu(
    fake_gpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to reproduce: the grader does not wait for a GPU it would not use (on the
    H100, the noop's empty reproduction waited 55 s behind the other samples)."""
    row, sample = _paper_needing_a_gpu("noop", tmp_path / "logs", capsys)
    assert (row["errors"], row["normalized"]) == (0, 0.0)
    assert not sample.store.get(GRADER_GPUS_KEY)

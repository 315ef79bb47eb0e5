"""ResearchGym tasks and PaperBench reproductions that need GPUs this machine cannot lend
are unavailable with the reason, and nothing is built for them; where the GPUs are there
(or, under Ray, a reproduction is placed on a node that has them) they run."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured

from labcoat.families._gpu_need import GPU_UNAVAILABLE
from labcoat.families.paperbench import paperbench
from labcoat.families.researchgym import researchgym
from labcoat.grading import Reservation, sample_reservation
from labcoat.sandbox import PythonEnv, machine_gpus
from labcoat.suites import SUITES_DIR

MINI = SUITES_DIR / "mini"


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """`gpus(n)`: this machine declares n GPUs (LABCOAT_GPUS)."""

    def declare(count: int) -> None:
        monkeypatch.setenv("LABCOAT_GPUS", str(count))
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        machine_gpus.cache_clear()

    yield declare
    machine_gpus.cache_clear()


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


def test_a_researchgym_task_needing_a_gpu(tmp_path: Path, gpus: Callable[[int], None]) -> None:
    target = str(_gpu_task(tmp_path))
    gpus(0)
    [sample] = researchgym(target=target, agent="noop").dataset
    assert sample.metadata[GPU_UNAVAILABLE] == "the task needs 1 GPU(s); this machine has none"
    config = sample.sandbox.config
    assert (config.gpus, config.environment) == (0, PythonEnv())  # nothing to build
    gpus(1)
    [sample] = researchgym(target=target, agent="noop").dataset
    assert GPU_UNAVAILABLE not in sample.metadata
    assert sample.sandbox.config.gpus == 1 and sample.sandbox.config.environment != PythonEnv()


def test_a_paperbench_reproduction_needing_a_gpu(gpus: Callable[[int], None]) -> None:
    gpus(0)
    [sample] = paperbench(agent="oracle", tasks="tail-averaged-sgd", reproduce_gpus=1).dataset
    reason = "the reproduction needs 1 GPU(s); this machine has none"
    assert sample.metadata[GPU_UNAVAILABLE] == reason
    assert sample.sandbox.config.environment == PythonEnv()
    # a Ray sample holding no GPU: its reproduction is placed on a node that has one
    with sample_reservation(Reservation(cpus=1, memory_mb=1024, gpus=0)):
        [placed] = paperbench(agent="oracle", tasks="tail-averaged-sgd", reproduce_gpus=1).dataset
    assert GPU_UNAVAILABLE not in placed.metadata
    gpus(1)
    [here] = paperbench(agent="oracle", tasks="tail-averaged-sgd", reproduce_gpus=1).dataset
    assert GPU_UNAVAILABLE not in here.metadata


def test_validate_and_check_name_the_missing_gpu(
    tmp_path: Path,
    gpus,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gpus(0)
    target = str(_gpu_task(tmp_path))
    code, out, _ = run_cli_captured(capsys, "check", target, "--no-build")
    assert code == 2 and "gpu: needs 1 GPU(s); this machine has none" in out
    code, out, _ = run_cli_captured(
        capsys, "validate", target, "--json", "--log-dir", str(tmp_path / "logs")
    )
    [verdict] = json_document(out)
    assert code == 0 and verdict["passed"], verdict  # unavailable is no failure
    assert verdict["unavailable"] == "the task needs 1 GPU(s); this machine has none"

"""The bundled `gpu` suite: listed everywhere, validated where there is a GPU (by
bench/gpu/check.sh on a GPU machine); elsewhere every task says why it cannot run, and
nothing is built for it (its torch would be gigabytes from the network). Given a Python
with torch (LABCOAT_TEST_TORCH_PYTHON, a CPU build is enough), the tasks that fall back to
the CPU are validated on a declared GPU."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured

from labcoat._unavailable import EXIT_NOTHING_RAN
from labcoat.sandbox import machine_has_gpu

pytestmark = pytest.mark.skipif(
    machine_has_gpu(), reason="this machine has a GPU: bench/gpu/check.sh validates the suite"
)

TASKS = {
    "softmax_rows/main": ("rebench", "the task needs 1 GPU(s); this machine has none"),
    "noisy-labels": ("researchgym", "the task needs 1 GPU(s); this machine has none"),
    "label-smoothing-noisy-labels": (
        "paperbench",
        "the reproduction needs 1 GPU(s); this machine has none",
    ),
}
TORCH_PYTHON = os.environ.get("LABCOAT_TEST_TORCH_PYTHON")


def test_the_gpu_suite_says_why_it_cannot_run_without_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    code, out, _ = run_cli_captured(capsys, "list", "gpu", "--json")
    assert code == 0
    assert {e["id"]: e["family"] for e in json_document(out)} == {
        task: family for task, (family, _) in TASKS.items()
    }
    code, out, _ = run_cli_captured(capsys, "check", "gpu")
    assert code == 2
    for task, (family, _) in TASKS.items():
        assert f"{task} ({family}): gpu: needs 1 GPU(s); this machine has none" in out
    logs = tmp_path / "logs"
    code, out, _ = run_cli_captured(capsys, "validate", "gpu", "--json", "--log-dir", str(logs))
    assert code == EXIT_NOTHING_RAN  # no failure, but nothing could be validated here
    assert {r["task"]: r["unavailable"] for r in json_document(out)} == {
        task: reason for task, (_, reason) in TASKS.items()
    }
    built = [
        json.loads(record.read_text())["requirements"]
        for record in (tmp_path / "cache" / "envs").glob("*/labcoat-env.json")
    ]
    assert not [r for r in built if r], built  # nothing built for them (only empty envs)


@pytest.mark.skipif(
    not TORCH_PYTHON,
    reason="set LABCOAT_TEST_TORCH_PYTHON to a Python with torch (a CPU build is enough) "
    "to validate the gpu suite's ResearchGym and PaperBench tasks on a declared GPU",
)
def test_the_torch_tasks_validate_on_a_declared_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], declare_gpus: Callable[[int], None]
) -> None:
    # a GPU torch cannot see: the tasks' code falls back to the CPU (softmax_rows cannot)
    declare_gpus(1)
    code, out, err = run_cli_captured(
        capsys, "validate", "gpu", "--task", "noisy-labels",
        "--task", "label-smoothing-noisy-labels", "--python", str(TORCH_PYTHON),
        "--json", "--log-dir", str(tmp_path / "logs"),
    )  # fmt: skip
    verdicts = {v["task"]: v for v in json_document(out)}
    assert code == 0, (verdicts, err[-3000:])
    for task in ("noisy-labels", "label-smoothing-noisy-labels"):
        assert verdicts[task]["passed"] and verdicts[task]["unavailable"] is None
        assert verdicts[task]["oracle"]["normalized"] >= 0.9

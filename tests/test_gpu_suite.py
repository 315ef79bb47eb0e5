"""The bundled `gpu` suite: listed everywhere, validated where there is a GPU (by
bench/gpu/check.sh on a GPU machine); elsewhere every task says why it cannot run, and
nothing is built for it (its torch would be gigabytes from the network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured

from labcoat.sandbox import machine_has_gpu

pytestmark = pytest.mark.skipif(
    machine_has_gpu(), reason="this machine has a GPU: bench/gpu/check.sh validates the suite"
)


def test_the_gpu_suite_says_why_it_cannot_run_without_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    code, out, _ = run_cli_captured(capsys, "list", "gpu", "--json")
    assert code == 0 and {e["id"] for e in json_document(out)} == {"softmax_rows/main"}
    code, out, _ = run_cli_captured(capsys, "check", "gpu")
    assert code == 2
    assert "softmax_rows/main (rebench): gpu: needs 1 GPU(s); this machine has none" in out
    logs = tmp_path / "logs"
    code, out, _ = run_cli_captured(capsys, "validate", "gpu", "--json", "--log-dir", str(logs))
    [result] = json_document(out)
    assert result["task"] == "softmax_rows/main"
    assert result["unavailable"] == "the task needs 1 GPU(s); this machine has none"
    built = [
        json.loads(record.read_text())["requirements"]
        for record in (tmp_path / "cache" / "envs").glob("*/labcoat-env.json")
    ]
    assert not [r for r in built if r], built  # nothing built for it (only empty envs)

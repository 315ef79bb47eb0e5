"""The whole bundled suite validated on a two-node cluster (long: every task, both agents)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import labcoat_command


@pytest.mark.slow
def test_validate_mini_on_a_cluster(cluster, tmp_path: Path) -> None:
    ray_cluster, _ = cluster
    args = ("validate", "mini", "--ray", ray_cluster.address, "--log-dir", str(tmp_path))
    result = subprocess.run(
        labcoat_command(*args, "--json"), capture_output=True, text=True, timeout=1800
    )
    verdicts = json.loads(result.stdout)
    failed = {v["task"]: v["problems"] for v in verdicts if not v["passed"]}
    assert result.returncode == 0 and not failed, (failed, result.stderr[-3000:])
    assert len(verdicts) == 10

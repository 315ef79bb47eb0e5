"""The whole bundled suite validated on a two-node cluster (long: every task, both agents)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import labcoat_command

# scores that time code wobble when other work loads the machine (locally as well): for
# them the run must score without errors; the thresholds are checked for every other task
TIMING_SENSITIVE = {"prefix_sum/main"}


@pytest.mark.slow
def test_validate_mini_on_a_cluster(cluster, tmp_path: Path) -> None:
    ray_cluster, _ = cluster
    args = ("validate", "mini", "--ray", ray_cluster.address, "--log-dir", str(tmp_path))
    result = subprocess.run(
        labcoat_command(*args, "--json"), capture_output=True, text=True, timeout=1800
    )
    verdicts = json.loads(result.stdout)
    assert len(verdicts) == 10, result.stderr[-3000:]
    failed = {
        v["task"]: v["problems"]
        for v in verdicts
        if not v["passed"] and v["task"] not in TIMING_SENSITIVE
    }
    assert not failed, (failed, result.stderr[-3000:])
    for v in verdicts:
        for agent in ("oracle", "noop"):
            assert v[agent]["runs"] >= 1 and v[agent]["errors"] == 0, v

"""Model calls from the nodes: keys through Ray's runtime env, never into a sandbox, and
one connection limit for the whole cluster."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from _logs import attempts, merged_logs
from _model_stub import conversation_stub
from conftest import run_labcoat

KEY = "sk-ray-test-3b8e1c"


def test_keys_reach_the_nodes_never_a_sandbox_and_connections_hold_cluster_wide(
    cluster, toy_suite: Path, tmp_path: Path
) -> None:
    ray_cluster, nodes = cluster
    assert "LOCALSTUB_API_KEY" not in os.environ  # the nodes did not start with it
    log_dir = tmp_path / "logs"
    with conversation_stub(delay=0.6) as stub:
        run_labcoat(
            "eval", str(toy_suite), "--agent", "research",
            "--model", "openai-api/localstub/scripted", "--max-connections", "1",
            "--task", "toy/cpu", "--task", "toy/gpu", "--task", "toy/bigmem",
            "--ray", ray_cluster.address, "--log-dir", str(log_dir),
            env={"LOCALSTUB_API_KEY": KEY, "LOCALSTUB_BASE_URL": stub.base_url},
        )  # fmt: skip
    [log] = merged_logs(log_dir)
    assert log.status == "success", log.error
    assert len(log.samples) == 3
    # every model call came from a node process holding the key ...
    assert len(stub.authorizations) >= 6
    assert set(stub.authorizations) == {f"Bearer {KEY}"}
    # ... and no sandbox had it: each sample's `env` ran in its sandbox without it
    for sample in log.samples:
        [env] = [m.text for m in sample.messages if m.role == "tool" and m.function == "bash"]
        assert "PATH=" in env and KEY not in env and "LOCALSTUB" not in env
        assert sample.scores["rebench_scorer"].value["normalized"] == 1.0
    # the samples ran at the same time on both nodes, yet the model saw one call at a time
    placed = {records[-1]["node_id"] for records in attempts(log_dir).values()}
    assert placed == set(nodes.values())
    spans = [
        (datetime.fromisoformat(s.started_at), datetime.fromisoformat(s.completed_at))
        for s in log.samples
        if s.started_at and s.completed_at
    ]
    assert len(spans) == 3
    assert max(start for start, _ in spans) < min(end for _, end in spans)  # all overlapped
    assert stub.peak == 1

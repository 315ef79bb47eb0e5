"""A real multi-node Ray cluster on this machine, and a toy RE-Bench family to run on it.

Nodes are Ray's own local-cluster nodes (`ray.cluster_utils.Cluster`): separate raylets
with their own declared resources, so placement, node loss and retries are Ray's real
behaviour. The head holds no CPU: samples run only on the worker nodes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster

GIB = 1024**3
OBJECT_STORE = 80 * 1024**2

FAMILY_PY = """
class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_tasks():
        return {name: {"name": name} for name in ("cpu", "gpu", "bigmem", "slow", "twogpu")}

    @staticmethod
    def get_instructions(t):
        return f"Submit the answer 1 ({t['name']})."

    @staticmethod
    def score(t, submission):
        return float(submission.strip() == "1")
"""

SIDECAR = """
tasks:
  cpu:
    title: Needs one CPU
    score: {start: 0.0, reference: 1.0, higher_is_better: true, final: last}
    resources: {cpus: 1, memory_gb: 1}
    oracle: {submission: "1"}
  gpu:
    title: Needs a GPU
    score: {start: 0.0, reference: 1.0, higher_is_better: true, final: last}
    resources: {cpus: 1, memory_gb: 1, gpus: 1}
    oracle: {submission: "1"}
  bigmem:
    title: Needs 3 GiB
    score: {start: 0.0, reference: 1.0, higher_is_better: true, final: last}
    resources: {cpus: 1, memory_gb: 3}
    oracle: {submission: "1"}
  slow:
    title: Takes a while, on a GPU
    score: {start: 0.0, reference: 1.0, higher_is_better: true, final: last}
    resources: {cpus: 1, memory_gb: 1, gpus: 1}
    oracle: {submission: "1", run: "sleep 8"}
  twogpu:
    title: Needs two GPUs (no node here has them)
    score: {start: 0.0, reference: 1.0, higher_is_better: true, final: last}
    resources: {cpus: 1, memory_gb: 1, gpus: 2}
    oracle: {submission: "1"}
"""


@pytest.fixture(scope="session")
def toy_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with one METR task family in labcoat's RE-Bench format."""
    root = tmp_path_factory.mktemp("ray-suite")
    family = root / "toy"
    family.mkdir()
    (family / "toy.py").write_text(FAMILY_PY)
    (family / "labcoat.yaml").write_text(SIDECAR)
    return root


def start_cluster() -> tuple[Cluster, dict[str, str]]:
    """Head (no CPU) + a CPU node with 4 GiB + a GPU node with 2 GiB; {role: node id}."""
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "object_store_memory": OBJECT_STORE},
    )
    cpu = cluster.add_node(num_cpus=2, memory=4 * GIB, object_store_memory=OBJECT_STORE)
    # the GPU is declared, not real: the node says so to labcoat too (LABCOAT_GPUS)
    gpu = cluster.add_node(
        num_cpus=2,
        num_gpus=1,
        memory=2 * GIB,
        object_store_memory=OBJECT_STORE,
        env_vars={"LABCOAT_GPUS": "1"},
    )
    cluster.wait_for_nodes()
    return cluster, {"cpu": cpu.node_id, "gpu": gpu.node_id}


def stop_cluster(cluster: Cluster) -> None:
    """Stop every process of the cluster and remove its session folder (Ray's logs)."""
    session = cluster.head_node.get_session_dir_path()
    cluster.shutdown()
    shutil.rmtree(session, ignore_errors=True)


@pytest.fixture(scope="session")
def cluster() -> Iterator[tuple[Cluster, dict[str, str]]]:
    started = start_cluster()
    try:
        yield started
    finally:
        stop_cluster(started[0])


def labcoat_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "labcoat"), *args]


def run_labcoat(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    expect: int = 0,
    cwd: Path | None = None,
) -> str:
    """`labcoat ARGS` as a user runs it (its own process, so Ray sees a new driver)."""
    result = subprocess.run(
        labcoat_command(*args),
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    out = result.stdout + result.stderr
    assert result.returncode == expect, out[-4000:]
    return out

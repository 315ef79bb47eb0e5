"""`--search-provider`, `--python` and `--any-gpu-model` are in effect on a remote Ray node.

A two-node local cluster: a head with no CPU (the launcher's `labcoat eval` joins it as a
driver) and one worker node, started by this test, not by the launcher, so nothing the
launcher sets in its own environment reaches the node's processes. The one sample can run
only there (the head has no CPU and no GPU). The run's choices must travel in the run's
configuration (`RunSpec`); each one shows in what the sample did:

- `--any-gpu-model`: the task asks for an H100 and the node has a T4, so without the
  choice the sample cannot run there at all;
- `--python`: the sandbox's Python imports a module only that interpreter's site-packages
  hold;
- `--search-provider`: the agent's `web_search` asks the search server this test runs
  (the task has `full_internet`), and its answer reaches the transcript.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from _logs import attempts, merged_logs
from conftest import GIB, OBJECT_STORE, run_labcoat
from ray.cluster_utils import Cluster

ANSWER = "remote-python-answer-5183"
RESULT_URL = "https://example.org/found-by-the-remote-node"

FAMILY_PY = """
class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_tasks():
        return {"probe": {"name": "probe"}}

    @staticmethod
    def get_instructions(t):
        return "Search the web, run the probe, submit 1."

    @staticmethod
    def get_permissions(t):
        return ["full_internet"]

    @staticmethod
    def score(t, submission):
        return float(submission.strip() == "1")
"""
MANIFEST = """
tasks:
  probe:
    resources: {cpus: 1, memory_gb: 1, gpu: {count_range: [1, 1], model: h100}}
"""
SIDECAR = """
tasks:
  probe:
    title: Needs an H100 and the network
    score: {start: 0.0, reference: 1.0, higher_is_better: true, final: last}
    oracle: {submission: "1"}
"""
# the node's GPU: a T4 as the NVIDIA driver describes it (read where labcoat reads the
# driver's folder; no device node, so the sandbox binds none)
T4 = "Model: \t\t Tesla T4\nGPU UUID: \t GPU-00000000-0000-0000-0000-000000005183\n"
SITECUSTOMIZE = """
from pathlib import Path

import labcoat.sandbox._gpus as gpus

gpus.DRIVER_GPUS = Path({driver!r})
"""


@pytest.fixture(scope="module")
def remote_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, str]]:
    """A head without CPU and one worker node with a (declared) T4; (cluster, its node id)."""
    shim = tmp_path_factory.mktemp("t4-node")
    driver = shim / "driver-gpus"
    (driver / "0000:00:1e.0").mkdir(parents=True)
    (driver / "0000:00:1e.0" / "information").write_text(T4)
    (shim / "sitecustomize.py").write_text(SITECUSTOMIZE.format(driver=str(driver)))
    python_path = [str(shim), *filter(None, [os.environ.get("PYTHONPATH")])]
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "object_store_memory": OBJECT_STORE},
    )
    try:
        node = cluster.add_node(
            num_cpus=2,
            num_gpus=1,
            memory=2 * GIB,
            object_store_memory=OBJECT_STORE,
            env_vars={"LABCOAT_GPUS": "1", "PYTHONPATH": os.pathsep.join(python_path)},
        )
        cluster.wait_for_nodes()
        yield cluster, node.node_id
    finally:
        session = cluster.head_node.get_session_dir_path()
        cluster.shutdown()
        shutil.rmtree(session, ignore_errors=True)


@pytest.fixture
def searxng() -> Iterator[tuple[str, list[str]]]:
    """A SearXNG-style server on loopback; (its provider spec, the paths it was asked)."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            payload = json.dumps(
                {"results": [{"title": "Found", "url": RESULT_URL, "content": "x"}]}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"searxng:http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()


def _probe_python(root: Path) -> Path:
    """A venv (this Python's version) whose site-packages alone holds `labcoat_probe`."""
    venv = root / "probe-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = venv.glob("lib/python3*/site-packages")
    (site / "labcoat_probe.py").write_text(f"ANSWER = {ANSWER!r}\n")
    return venv / "bin" / "python"


def _suite(root: Path) -> Path:
    family = root / "suite" / "remote"
    family.mkdir(parents=True)
    (family / "remote.py").write_text(FAMILY_PY)
    (family / "manifest.yaml").write_text(MANIFEST)
    (family / "labcoat.yaml").write_text(SIDECAR)
    return family.parent


def test_run_choices_are_in_effect_on_the_remote_node(
    remote_node: tuple[Cluster, str], searxng: tuple[str, list[str]], tmp_path: Path
) -> None:
    cluster, node_id = remote_node
    provider, asked = searxng
    script = tmp_path / "turns.yaml"
    script.write_text(
        "- tool: web_search\n  arguments: {query: remote probe}\n"
        "- tool: bash\n"
        "  arguments: {cmd: \"python -c 'import labcoat_probe; print(labcoat_probe.ANSWER)'\"}\n"
        "- tool: submit\n  arguments: {answer: '1'}\n"
    )
    log_dir = tmp_path / "logs"
    out = run_labcoat(
        "eval", str(_suite(tmp_path)), "--task", "remote/probe", "--agent", "research",
        "--model", "labcoat/scripted", "-M", f"script={script}",
        "--search-provider", provider, "--python", str(_probe_python(tmp_path)),
        "--any-gpu-model", "--ray", cluster.address, "--log-dir", str(log_dir),
        "--no-inspect",
    )  # fmt: skip
    [log] = merged_logs(log_dir)
    [sample] = log.samples or []
    placed = [r["node_id"] for records in attempts(log_dir).values() for r in records]
    # --any-gpu-model: the sample ran, on the T4 node (without it: "this machine has 0 of
    # that model", and it cannot run here)
    assert placed == [node_id], (placed, out[-3000:])
    assert sample.error is None, (sample.error, out[-3000:])
    tools = {m.function: m.text for m in sample.messages if m.role == "tool"}
    # --python: the sandbox's Python sees the interpreter's site-packages
    assert ANSWER in tools.get("bash", ""), tools
    # --search-provider: the remote node's agent searched with the server given here
    assert asked and "remote" in asked[0], asked
    assert RESULT_URL in tools.get("web_search", ""), tools

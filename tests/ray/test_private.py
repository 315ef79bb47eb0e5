"""`--ray` without an address: a private Ray instance on loopback, whatever else runs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _logs import attempts, merged_logs
from conftest import run_labcoat

LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}

PROBE = """
import json, os, psutil, time
from labcoat._run._ray._cluster import connect
ray = connect("local")

@ray.remote
def where():
    context = ray.get_runtime_context()
    return context.get_node_id(), ray.util.get_node_ip_address(), os.nice(0)

node_id, node_ip, niceness = ray.get(where.remote())
time.sleep(1)
me = psutil.Process()
listening, peers = [], []
for p in [me, *me.children(recursive=True)]:
    try:
        connections = p.net_connections(kind="inet")
    except psutil.Error:
        continue
    for c in connections:
        if c.status == psutil.CONN_LISTEN:
            listening.append([p.name(), c.laddr.ip, c.laddr.port])
        elif c.raddr:
            peers.append([p.name(), c.laddr.ip, c.raddr.ip])
print(json.dumps({
    "gcs": ray.get_runtime_context().gcs_address,
    "nodes": [n["NodeID"] for n in ray.nodes()],
    "node_id": node_id, "node_ip": node_ip, "niceness": niceness,
    "listening": listening, "peers": peers,
    "token_file": os.path.exists(os.path.expanduser("~/.ray/auth_token")),
    "auth": os.environ.get("RAY_AUTH_MODE"),
}))
"""


def test_the_private_instance_listens_on_loopback_only_and_ignores_a_running_cluster(
    cluster, tmp_path: Path
) -> None:
    ray_cluster, nodes = cluster
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        # RAY_ADDRESS: what `ray.init()` would join; HOME: a token file is this run's doing
        env={**_env(), "RAY_ADDRESS": ray_cluster.address, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    # its own cluster, not the running one
    assert seen["gcs"] != ray_cluster.address and seen["gcs"].startswith("127.0.0.1:")
    assert not set(seen["nodes"]) & set(nodes.values())
    assert seen["node_ip"] == "127.0.0.1"
    # every port of every Ray process of it (GCS, raylet, agents, workers, the driver)
    # listens on loopback, and every connection between them goes through loopback
    processes = {name for name, _, _ in seen["listening"]}
    assert {"gcs_server", "raylet"} <= processes, seen["listening"]
    assert [x for x in seen["listening"] if x[1] not in LOOPBACK] == []
    assert [x for x in seen["peers"] if x[2] not in LOOPBACK] == []
    # with a token of its own, in no file another process could read
    assert seen["auth"] == "token" and not seen["token_file"]
    # its workers run at this machine's priority, not Ray's default nice 15 (as root the
    # run's setup hook gets there too; as another user only `worker_niceness=0` does)
    assert seen["niceness"] == os.nice(0)


def test_eval_with_ray_and_no_address_runs_on_its_own_instance(
    cluster, toy_suite: Path, tmp_path: Path
) -> None:
    ray_cluster, nodes = cluster
    log_dir = tmp_path / "logs"
    run_labcoat(
        "eval", str(toy_suite), "--agent", "oracle", "--task", "toy/cpu",
        "--log-dir", str(log_dir), "--ray",
        env={"RAY_ADDRESS": ray_cluster.address},
    )  # fmt: skip
    [log] = merged_logs(log_dir)
    assert log.status == "success", log.error
    [run] = attempts(log_dir)["toy/cpu"]
    assert run["node_id"] not in nodes.values() and run["node_ip"] == "127.0.0.1"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}

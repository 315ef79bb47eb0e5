"""Failures on a real cluster: a node lost mid-sample, a launcher killed and run again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from _logs import attempts, merged_logs
from conftest import (
    GIB,
    OBJECT_STORE,
    labcoat_command,
    run_labcoat,
    start_cluster,
    stop_cluster,
)

from labcoat.analysis import read_runs


def wait_for(condition, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def started_markers(log_dir: Path, sample: str) -> list[dict]:
    return [
        json.loads(p.read_text())
        for p in sorted(log_dir.glob("*.shards/*/*.attempt"))
        if json.loads(p.read_text())["sample_id"] == sample
    ]


def test_a_node_lost_mid_sample_is_retried_elsewhere_ahead_of_queued_samples(
    toy_suite: Path, tmp_path: Path
) -> None:
    cluster, nodes = start_cluster()  # its own: this test kills a node
    try:
        log_dir = tmp_path / "logs"
        # four samples need the one GPU: they run one at a time, the rest wait
        args = (
            "eval", str(toy_suite), "--agent", "oracle", "--task", "toy/slow",
            "--task", "toy/gpu", "--task", "toy/cpu", "--epochs", "2",
            "--ray", cluster.address, "--log-dir", str(log_dir),
        )  # fmt: skip
        launcher = subprocess.Popen(
            labcoat_command(*args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        first, *_ = wait_for(lambda: started_markers(log_dir, "toy/slow"), 120, "a slow sample")
        assert first["node_id"] == nodes["gpu"]  # the only node with a GPU
        # let Inspect get going on the node (its attempt log exists), then lose the node
        shard = f"e{first['epoch']}-toy_slow*"
        wait_for(lambda: list(log_dir.glob(f"*.shards/{shard}/*.eval")), 60, "its log")
        waiting = [
            (s, e) for s in ("toy/slow", "toy/gpu") for e in (1, 2)
            if not any(m["epoch"] == e for m in started_markers(log_dir, s))
        ]  # fmt: skip
        assert waiting, "other GPU samples should still be queued"
        [doomed] = [n for n in cluster.worker_nodes if n.node_id == nodes["gpu"]]
        cluster.remove_node(doomed, allow_graceful=False)
        replacement = cluster.add_node(
            num_cpus=2,
            num_gpus=1,
            memory=2 * GIB,
            object_store_memory=OBJECT_STORE,
            env_vars={"LABCOAT_GPUS": "1"},  # declared like the node it replaces
        )
        out, _ = launcher.communicate(timeout=300)
        assert launcher.returncode == 0, out[-4000:]
    finally:
        stop_cluster(cluster)
    [log] = merged_logs(log_dir)
    assert log.status == "success", log.error
    # the lost sample ran first on the new node, before the samples that were waiting
    on_new = sorted(
        (m["started"], m["sample_id"], m["epoch"])
        for m in (*started_markers(log_dir, "toy/slow"), *started_markers(log_dir, "toy/gpu"))
        if m["node_id"] == replacement.node_id
    )
    assert on_new[0][1:] == ("toy/slow", first["epoch"]), on_new
    assert len(on_new) == 1 + len(waiting)
    slow = next(s for s in log.samples if s.id == "toy/slow" and s.epoch == first["epoch"])
    assert slow.error is None and slow.scores["rebench_scorer"].value["normalized"] == 1.0
    # retried on the new node, and the log says why, naming the lost node
    runs = [r for r in attempts(log_dir)["toy/slow"] if r["epoch"] == first["epoch"]]
    assert [r["node_id"] for r in runs] == [nodes["gpu"], replacement.node_id]
    [why] = slow.error_retries or []
    assert "stopped without finishing: its node was lost" in why.message
    assert nodes["gpu"][:12] in why.message
    assert "retrying it first" in out
    for cpu in (s for s in log.samples if s.id == "toy/cpu"):
        assert cpu.error_retries is None
    assert len(attempts(log_dir)["toy/cpu"]) == 2


def test_a_stopped_launchers_cut_attempts_say_the_launcher_stopped(
    cluster, toy_suite: Path, tmp_path: Path
) -> None:
    ray_cluster, _ = cluster
    log_dir = tmp_path / "logs"
    args = (
        "eval", str(toy_suite), "--agent", "oracle", "--task", "toy/slow",
        "--ray", ray_cluster.address, "--log-dir", str(log_dir),
    )  # fmt: skip
    for stop, count in ((signal.SIGTERM, 1), (signal.SIGKILL, 2)):
        launcher = subprocess.Popen(
            labcoat_command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for(lambda n=count: len(started_markers(log_dir, "toy/slow")) >= n, 120, "a start")
        wait_for(lambda n=count: len(list(log_dir.glob("*.shards/*/*.eval"))) >= n, 60, "its log")
        os.kill(launcher.pid, stop)
        launcher.wait(timeout=60)
    run_labcoat(*args)
    [log] = merged_logs(log_dir)
    assert log.status == "success", log.error
    [sample] = log.samples
    assert sample.scores["rebench_scorer"].value["normalized"] == 1.0
    interrupted, killed = [r.message for r in sample.error_retries or []]
    # SIGTERM (or Ctrl-C): the launcher recorded that it ended the attempt
    assert "stopped without finishing: the launcher was interrupted" in interrupted
    # SIGKILL: nothing could be recorded; the next launch knows no launcher saw the end
    assert "stopped without finishing: the launcher stopped (killed" in killed
    assert "node" not in killed.split("stopped without finishing")[1]


def test_a_killed_launcher_resumes_with_nothing_lost_or_run_twice(cluster, tmp_path: Path) -> None:
    ray_cluster, _ = cluster
    log_dir = tmp_path / "logs"
    args = (
        "eval", "mini", "--agent", "noop", "--task", "adaptive-huber", "--epochs", "2",
        "--max-samples", "1", "--ray", ray_cluster.address, "--log-dir", str(log_dir),
    )  # fmt: skip
    launcher = subprocess.Popen(
        labcoat_command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def finished_shards() -> list[Path]:
        return [
            p.parent for p in log_dir.glob("*.shards/*/*.eval")
            if read_runs_status(p) == "success"
        ]  # fmt: skip

    wait_for(lambda: len(finished_shards()) >= 3, 180, "three finished samples")
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    done_before = {p.name: sorted(q.name for q in p.iterdir()) for p in finished_shards()}
    assert 3 <= len(done_before) < 14, "the launcher should die mid-run"

    out = run_labcoat(*args)
    assert f"{len(done_before)} of 14 sample(s) already finished" in out
    [log] = merged_logs(log_dir)
    assert log.status == "success", log.error
    keys = sorted((str(s.id), s.epoch) for s in log.samples)
    assert len(keys) == 14 and len(set(keys)) == 14  # 7 snippets x 2 epochs, each once
    # as a local run with --epochs 2 records it: two epochs, reduced to one value a snippet
    assert log.eval.config.epochs == 2 and log.eval.dataset.samples == 7
    assert log.reductions is not None and len(log.reductions[0].samples) == 7
    for shard, files in done_before.items():  # finished before the kill: never run again
        assert sorted(q.name for q in (next(log_dir.glob("*.shards")) / shard).iterdir()) == files
    runs = read_runs(log_dir)
    assert len(runs.samples) == 14 and set(runs.samples["epoch"]) == {1, 2}


def read_runs_status(path: Path) -> str | None:
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(str(path), header_only=True).status
    except Exception:
        return None

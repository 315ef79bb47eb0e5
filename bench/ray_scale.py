"""What `--ray` costs and what a second node buys, on this machine.

Runs the same samples (by default every ResearchCodeBench snippet of `mini` with the
oracle: real sandboxes and graders, 24 samples) three ways, each into a fresh log dir:

1. locally, one sample at a time (`labcoat eval ... --max-samples 1`);
2. with `--ray` on a local Ray cluster of one node with one CPU (so also one at a time);
3. with `--ray` on a local Ray cluster of two nodes with one CPU each.

Each run is the `labcoat` command in its own process, timed from start to exit. The
clusters are started before the clock starts (as a real cluster is already up). 1 and 2
also run at twice the epochs, so what each further sample costs is told apart from what
a run costs once (a Ray worker's start and first imports, the plan, the merge).

Prints the wall times; `overhead_per_sample_s`, what `--ray` adds to each further
sample: ((2 at 2E - 2 at E) - (1 at 2E - 1 at E)) / samples at E; `ray_fixed_s`, what it
adds once per run: (2 - 1) at E less the samples' overhead; the Ray launcher's own cost
(a run whose samples are all finished: connect, plan, merge); `speedup_2_nodes` = 2 / 3;
`worker_niceness`, what the samples' workers ran at (the clusters are Ray's defaults,
which start workers at nice 15: labcoat takes the node's priority back, as root).

    python bench/ray_scale.py [--family researchcodebench] [--task ID ...] [--agent oracle]
                              [--epochs N] [--repeat 1]

Light samples (the default: a fraction of a second each) show the overhead; heavier ones
show the speed-up, e.g. `--family researchgym --epochs 2` (four samples of ~10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)
from ray.cluster_utils import Cluster

GIB = 1024**3
STORE = 100 * 1024**2


def labcoat(*args: str) -> float:
    """Seconds `labcoat ARGS` took; fails loudly if it failed."""
    command = [str(Path(sys.executable).parent / "labcoat"), *args]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{(result.stdout + result.stderr)[-3000:]}")
    return seconds


def cluster(nodes: int) -> Cluster:
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": STORE})
    for _ in range(nodes):
        c.add_node(num_cpus=1, memory=6 * GIB, object_store_memory=STORE)
    c.wait_for_nodes()
    return c


def samples_in(log_dir: Path) -> int:
    from inspect_ai.log import read_eval_log

    return sum(len(read_eval_log(str(p)).samples or []) for p in log_dir.glob("*.eval"))


def niceness_in(log_dir: Path) -> set[int]:
    """What the samples' workers ran at (Ray starts workers at nice 15; labcoat undoes it)."""
    markers = log_dir.glob("*.shards/*/*.attempt")
    return {json.loads(m.read_text()).get("niceness", -1) for m in markers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="mini")
    parser.add_argument("--family", default="researchcodebench")
    parser.add_argument("--task", action="append", default=[])
    parser.add_argument("--agent", default="oracle")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    selection = [args.target, "--family", args.family, "--agent", args.agent]
    for task in args.task:
        selection += ["--task", task]
    epochs = (args.epochs, 2 * args.epochs)
    load_before = os.getloadavg()[0]
    local_s: dict[int, list[float]] = {e: [] for e in epochs}
    ray1_s: dict[int, list[float]] = {e: [] for e in epochs}
    ray2_s, fixed_s = [], []
    niceness: set[int] = set()
    samples = 0
    with tempfile.TemporaryDirectory(prefix="labcoat-ray-bench-") as tmp:
        for round_ in range(args.repeat):
            base = Path(tmp) / str(round_)
            for e in epochs:
                local_dir = base / f"local-e{e}"
                run = ("eval", *selection, "--epochs", str(e), "--log-dir", str(local_dir))
                local_s[e].append(labcoat(*run, "--max-samples", "1"))
                if e == args.epochs:
                    samples = samples_in(local_dir)
            for nodes in (1, 2):
                c = cluster(nodes)
                try:
                    for e in epochs if nodes == 1 else epochs[:1]:
                        log_dir = base / f"ray{nodes}-e{e}"
                        run = ("eval", *selection, "--epochs", str(e), "--ray", c.address,
                               "--log-dir", str(log_dir))  # fmt: skip
                        (ray1_s[e] if nodes == 1 else ray2_s).append(labcoat(*run))
                        assert samples_in(log_dir) == samples * e // args.epochs, "lost samples"
                        niceness |= niceness_in(log_dir)
                        if nodes == 1 and e == args.epochs:  # all finished: the launcher's own
                            fixed_s.append(labcoat(*run))
                finally:
                    c.shutdown()
    med = statistics.median
    local, local2 = med(local_s[epochs[0]]), med(local_s[epochs[1]])
    ray1, ray1_2 = med(ray1_s[epochs[0]]), med(ray1_s[epochs[1]])
    ray2, fixed = med(ray2_s), med(fixed_s)
    per_sample = ((ray1_2 - ray1) - (local2 - local)) / samples
    what = f"{args.family} {' '.join(args.task)}".strip()
    print(f"samples={samples} ({what}, {args.agent} agent, {args.epochs} epoch(s), {args.target})")
    print(f"cpus_on_this_machine={os.cpu_count()}")
    # other work on the machine moves every figure: say how loaded it was
    print(f"load_average_1m={load_before:.2f} (before) {os.getloadavg()[0]:.2f} (after)")
    print(f"local_one_at_a_time_s={local:.1f} (twice the epochs: {local2:.1f})")
    print(f"ray_1_node_1_cpu_s={ray1:.1f} (twice the epochs: {ray1_2:.1f})")
    print(f"ray_2_nodes_1_cpu_each_s={ray2:.1f}")
    print(f"ray_launcher_fixed_s={fixed:.1f}  (a re-run with every sample finished)")
    print(f"overhead_per_sample_s={per_sample:.2f}")
    print(f"ray_fixed_s={ray1 - local - per_sample * samples:.1f}  (once per run)")
    print(f"speedup_2_nodes={ray1 / ray2:.2f}")
    print(f"worker_niceness={','.join(map(str, sorted(niceness)))}  (this process: {os.nice(0)})")


if __name__ == "__main__":
    main()

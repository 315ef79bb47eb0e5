"""prefix_sum's score under other load on the machine.

Scores the oracle (reference solution) and the noop (starting solution) of the bundled
prefix_sum task, each ROUNDS times, with N busy processes (`python -c 'while True: pass'`)
running beside them, and prints each normalized score, how the runs were timed and the
median time of each solution the scorer timed (the agent's, the start's, the reference's).
Beside each score, `best_of_5` scores the same runs as the scorer did before it compared
each round's runs (the best run of each solution, across rounds): a machine whose speed
drifts between rounds moves that one and not the score. Validation needs oracle ≥ 0.9
and noop ≤ 0.1 whatever the load.

    python bench/prefix_sum_load.py [--busy 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)
import anyio

from labcoat.families.rebench import TaskFamilyDir, normalize, run_operation
from labcoat.suites import resolve_target

FAMILY = TaskFamilyDir(resolve_target("mini") / "rebench" / "prefix_sum")


async def score(which: str) -> dict:
    with tempfile.TemporaryDirectory() as home:
        await run_operation(FAMILY, "start", "main", home=Path(home), home_writable=True)
        if which == "oracle":
            reference = FAMILY.path / "reference/solution/prefix_sum.py"
            shutil.copy(reference, Path(home) / "solution/prefix_sum.py")
        run = await run_operation(
            FAMILY, "intermediate_score", "main", home=Path(home), cpus=1, memory_mb=2048
        )
    return run.result


def best_of(runs: dict[str, list[dict]]) -> float:
    """The raw score the scorer gave before: each solution's best run, across rounds."""
    best = {which: math.log(min(r["seconds"] for r in timings)) for which, timings in runs.items()}
    return (best["start"] - best["agent"]) / (best["start"] - best["reference"])


async def main(busy: int, rounds: int) -> None:
    spec = FAMILY.sidecar.tasks["main"].score.model_dump()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        for which in ("oracle", "noop"):
            for _ in range(rounds):
                result = await score(which)
                # the scorer times the agent's, the start's and the reference's solution
                runs = result.get("details", {}).get("runs", {})
                methods = sorted({r["method"] for timings in runs.values() for r in timings})
                typical = {k: v for k, v in result["message"].items() if k.endswith("seconds")}
                print(
                    f"{which} normalized={normalize(result['score'], spec):.3f} "
                    f"raw={result['score']:.3f} best_of_5={best_of(runs):.3f} "
                    f"methods={methods} median_seconds={typical}"
                )
    finally:
        for spinner in spinners:
            spinner.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    anyio.run(main, args.busy, args.rounds)

"""Overhead of one command through the bwrap sandbox, against a bare subprocess.

Runs `true` N times through `BwrapSession.exec` and N times as a bare asyncio
subprocess (the same async path a harness without a sandbox would use), interleaved in
rounds so drift in machine load hits both alike. Prints medians and, last,
`exec_overhead_ratio=<median sandbox / median bare>`.

    python bench/sandbox_exec.py [--runs 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)
import anyio

from labcoat.sandbox import BwrapConfig, BwrapSession


async def _time_bare() -> float:
    start = time.perf_counter()
    await anyio.run_process(["true"], check=True)
    return time.perf_counter() - start


async def _time_sandbox(session: BwrapSession) -> float:
    start = time.perf_counter()
    result = await session.exec(["true"])
    assert result.success
    return time.perf_counter() - start


async def main(runs: int) -> None:
    session = await BwrapSession.create(BwrapConfig())
    try:
        for _ in range(20):  # warm up both paths
            await _time_bare()
            await _time_sandbox(session)
        bare: list[float] = []
        sandboxed: list[float] = []
        for _ in range(runs):
            bare.append(await _time_bare())
            sandboxed.append(await _time_sandbox(session))
    finally:
        await session.close()
    median_bare = statistics.median(bare)
    median_sandbox = statistics.median(sandboxed)
    print(f"runs={runs}")
    print(f"limits={session.limit_mechanism}")
    print(f"bare_median_ms={median_bare * 1000:.3f}")
    print(f"sandbox_median_ms={median_sandbox * 1000:.3f}")
    print(f"sandbox_p90_ms={statistics.quantiles(sandboxed, n=10)[-1] * 1000:.3f}")
    print(f"exec_overhead_ratio={median_sandbox / median_bare:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    anyio.run(main, parser.parse_args().runs)

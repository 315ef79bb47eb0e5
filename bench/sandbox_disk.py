"""The disk quota's cost and strength, per mechanism (loop image, FUSE image, watcher, none).

For each mechanism: the median time to create and close a sandbox with a 16 GiB quota,
the write throughput of one 512 MiB file in /tmp (dd, fsync'd), the time to create
2,000 small files, and how far past a 256 MiB quota a 3 GiB write got (the overshoot).

    python bench/sandbox_disk.py [--rounds 5]     # as root for the loop mechanism
    (FUSE: as a user for whom labcoat check says "disk quota by fuse")
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)
import anyio

from labcoat.sandbox import BwrapConfig, BwrapSession, has_separate_root
from labcoat.sandbox._disk import fuse_problem

MiB = 1024 * 1024
WRITE = "dd if=/dev/zero of=/tmp/w bs=1M count=512 conv=fsync status=none; rm -f /tmp/w"
SMALL = "mkdir -p /tmp/s && for i in $(seq 1 2000); do echo $i > /tmp/s/$i; done; rm -rf /tmp/s"
FLOOD = "dd if=/dev/zero of=/tmp/big bs=1M count=3072 status=none"
FILES = "for i in $(seq 1 3072); do dd if=/dev/zero of=/tmp/f$i bs=1M count=1 status=none; done"


async def _timed(session: BwrapSession, script: str) -> float:
    start = time.perf_counter()
    await session.exec(["sh", "-c", script], timeout=600)
    return time.perf_counter() - start


async def measure(mechanism: str, rounds: int) -> dict[str, float | str]:
    os.environ["LABCOAT_SANDBOX_DISK"] = mechanism
    create, write, small = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        session = await BwrapSession.create(BwrapConfig(disk_mb=16384))
        await session.exec(["true"])
        create.append(time.perf_counter() - start)
        try:
            write.append(await _timed(session, WRITE))
            small.append(await _timed(session, SMALL))
        finally:
            await session.close()
    overshoot = {}
    for name, script in (("one_file", FLOOD), ("many_files", FILES)):
        session = await BwrapSession.create(BwrapConfig(disk_mb=256))
        try:
            await session.exec(["sh", "-c", script], timeout=600)
            overshoot[name] = session.disk.used_bytes() / MiB - 256
        finally:
            await session.close()
    return {
        "mechanism": session.disk_mechanism,
        "create_ms": statistics.median(create) * 1000,
        "write_MBps": 512 * MiB / statistics.median(write) / 1e6,
        "small_files_s": statistics.median(small),
        "overshoot_one_file_MiB": overshoot["one_file"],
        "overshoot_many_files_MiB": overshoot["many_files"],
    }


async def main(rounds: int) -> None:
    fuse = fuse_problem(other_ids=has_separate_root()) is None
    mechanisms = (
        ["off", "watch"] + (["loop"] if os.geteuid() == 0 else []) + (["fuse"] if fuse else [])
    )
    for mechanism in mechanisms:
        figures = await measure(mechanism, rounds)
        print(
            " ".join(
                f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()
            )
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    anyio.run(main, parser.parse_args().rounds)

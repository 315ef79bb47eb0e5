"""What keeping samples apart costs, and what still passes between them.

Cost: a sample's start (session created, one command, closed) and two lookup-heavy
commands, with each sample's own overlays of the shared trees (labcoat's way) and with
the trees bound as they are (the way before), interleaved in rounds. Nothing is copied:
the overlays hold no data of their own.

What remains: two channels between two samples of one environment, measured. The page
cache (shared: overlays read the host's files) — the sender loads or drops pages of a
large system library, the receiver asks for each page without waiting (RWF_NOWAIT); and
the machine-wide count of open files (/proc/sys/fs/file-nr) — the sender opens many
files in a time slot for a 1, the receiver reads the count. Prints bits, seconds, bit
errors and bits per second for each.

    python bench/sample_channels.py [--rounds 8] [--channels-only]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)
import anyio

from labcoat.sandbox import BwrapConfig, BwrapSession, PythonEnv, _command
from labcoat.sandbox._private_trees import PrivateTrees

LOOKUPS = {
    "imports": ["python3", "-c", "import email.mime.text, http.client, json, decimal, asyncio"],
    "find /usr": ["sh", "-c", "find /usr -xdev | wc -l"],
}


class SharedTrees(PrivateTrees):
    """The command line as before: the host's trees bound as they are."""

    def bind(self, source: str, target: str) -> list[str]:
        return ["--ro-bind", source, target]

    def dev_args(self) -> list[str]:
        return []

    def proc_args(self) -> list[str]:
        return []

    def launcher(self) -> list[str]:
        return []


@contextmanager
def trees_as(kind: type[PrivateTrees]) -> Iterator[None]:
    saved = _command.PrivateTrees
    _command.PrivateTrees = kind  # type: ignore[misc]
    try:
        yield
    finally:
        _command.PrivateTrees = saved  # type: ignore[misc]


async def one_sample(kind: type[PrivateTrees], times: dict[str, list[float]]) -> None:
    with trees_as(kind):
        start = time.perf_counter()
        session = await BwrapSession.create(BwrapConfig(environment=PythonEnv()))
        try:
            assert (await session.exec(["true"])).success
            times["start"].append(time.perf_counter() - start)
            for name, argv in LOOKUPS.items():
                began = time.perf_counter()
                assert (await session.exec(argv)).success
                times[name].append(time.perf_counter() - began)
        finally:
            await session.close()


async def cost(rounds: int) -> None:
    kinds = {"own overlays": PrivateTrees, "shared binds": SharedTrees}
    times: dict[str, dict[str, list[float]]] = {
        k: {m: [] for m in ("start", *LOOKUPS)} for k in kinds
    }
    await one_sample(PrivateTrees, {m: [] for m in ("start", *LOOKUPS)})  # warm caches
    for _ in range(rounds):
        for label, kind in kinds.items():
            await one_sample(kind, times[label])
    for measure in ("start", *LOOKUPS):
        row = {k: statistics.median(v[measure]) * 1000 for k, v in times.items()}
        print(
            f"{measure:10s} own overlays {row['own overlays']:7.1f} ms   shared binds "
            f"{row['shared binds']:7.1f} ms   difference "
            f"{row['own overlays'] - row['shared binds']:+6.1f} ms (median of {rounds})"
        )
    print("disk: 0 bytes copied (each overlay is a mount over the host's files)")


PAGE_CACHE = r"""
import glob, os, sys, time
role, bits = sys.argv[1], sys.argv[2]
path = max(glob.glob("/usr/lib/x86_64-linux-gnu/*.so*") + glob.glob("/usr/lib/*/*.so*"),
           key=lambda p: (os.path.getsize(p), p))
fd = os.open(path, os.O_RDONLY)
pages = min(len(bits), os.path.getsize(path) // 4096)
start = time.perf_counter()
if role == "send":
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    for i, bit in enumerate(bits[:pages]):
        if bit == "1":
            os.posix_fadvise(fd, i * 4096, 4096, os.POSIX_FADV_WILLNEED)
    print("", time.perf_counter() - start)
else:  # how long one byte of each page takes: the page cache answers in microseconds
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    took = []
    for i in range(pages):
        began = time.perf_counter_ns()
        os.pread(fd, 1, i * 4096)
        took.append(time.perf_counter_ns() - began)
    ordered = sorted(took)
    limit = (ordered[len(ordered) // 10] * ordered[9 * len(ordered) // 10]) ** 0.5
    print("".join("1" if t < limit else "0" for t in took), time.perf_counter() - start)
"""

FILE_COUNT = r"""
import os, sys, time
role, bits, t0, slot = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
got = []
for i, bit in enumerate(bits):
    begin = t0 + i * slot
    time.sleep(max(0.0, begin - time.time()))
    if role == "send":
        held = [os.open("/dev/null", os.O_RDONLY) for _ in range(900)] if bit == "1" else []
        time.sleep(max(0.0, begin + slot - time.time()))
        for fd in held:
            os.close(fd)
    else:
        time.sleep(max(0.0, begin + slot / 2 - time.time()))
        got.append(int(open("/proc/sys/fs/file-nr").read().split()[0]))
if got:
    middle = (min(got) + max(got)) / 2
    print("".join("1" if n > middle else "0" for n in got), len(bits) * slot)
"""


def report(name: str, sent: str, received: str, seconds: float) -> None:
    errors = sum(a != b for a, b in zip(sent, received, strict=False))
    errors += abs(len(sent) - len(received))
    print(
        f"{name:28s} {len(sent)} bits in {seconds:.3f} s, {errors} wrong: "
        f"{len(sent) / seconds:,.0f} bit/s"
    )


async def file_count(sender: BwrapSession, receiver: BwrapSession, slot: float) -> None:
    sent = "".join(random.choice("01") for _ in range(128))
    t0 = str(time.time() + 1.5)  # both clocks are the host's: slots agree
    outcome: dict[str, str] = {}

    async def run(session: BwrapSession, role: str) -> None:
        result = await session.exec(["python3", "-c", FILE_COUNT, role, sent, t0, str(slot)])
        assert result.success, result.stderr
        outcome[role] = result.stdout

    async with anyio.create_task_group() as group:
        group.start_soon(run, sender, "send")
        group.start_soon(run, receiver, "receive")
    bits, seconds = outcome["receive"].split()
    report(f"open files, {slot * 1000:.0f} ms slots", sent, bits, float(seconds))


async def channels() -> None:
    env = PythonEnv()
    sender = await BwrapSession.create(BwrapConfig(environment=env))
    receiver = await BwrapSession.create(BwrapConfig(environment=env))
    try:
        sent = "".join(random.choice("01") for _ in range(4096))
        done = await sender.exec(["python3", "-c", PAGE_CACHE, "send", sent])
        assert done.success, done.stderr
        got = await receiver.exec(["python3", "-c", PAGE_CACHE, "receive", sent])
        assert got.success, got.stderr
        bits, seconds = got.stdout.split()
        report("page cache", sent[: len(bits)], bits, float(seconds) + float(done.stdout))
        for slot in (0.05, 0.01):
            await file_count(sender, receiver, slot)
    finally:
        await sender.close()
        await receiver.close()


async def main(rounds: int, channels_only: bool) -> None:
    if not channels_only:
        await cost(rounds)
    await channels()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--channels-only", action="store_true")
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.channels_only)

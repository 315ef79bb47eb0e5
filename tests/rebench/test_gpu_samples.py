"""2K samples of a 1-GPU METR task on a machine with K GPUs (fake ones, see fake_gpus):
never more than K hold GPUs at once, each sees exactly one GPU, its own, and its log says
which, for how long, and what nvidia-smi saw of it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from inspect_ai import eval
from scripted import OUTPUTS, scripted

from labcoat.families.rebench import rebench
from labcoat.sandbox import GPUS_KEY, GpuLease
from labcoat.sandbox._gpu_pool import GpuPool

K = 2
LOOK = "ls /dev | grep '^nvidia[0-9]'; echo cuda=$CUDA_VISIBLE_DEVICES; sleep 1"


def test_2k_one_gpu_samples_on_k_gpus(
    metr_target: Path, tmp_path: Path, fake_gpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(str(i) for i in range(K)))
    holding: list[tuple[float, int]] = []  # (time, holders after the change)
    count = 0
    take, give = GpuPool._try, GpuLease.release

    def counted_take(self: GpuPool, *args: object) -> GpuLease | None:
        nonlocal count
        lease = take(self, *args)  # type: ignore[arg-type]
        if lease is not None and lease.gpus:
            count += 1
            holding.append((time.monotonic(), count))
        return lease

    def counted_give(self: GpuLease) -> None:
        nonlocal count
        if self.held:
            count -= 1
            holding.append((time.monotonic(), count))
        give(self)

    monkeypatch.setattr(GpuPool, "_try", counted_take)
    monkeypatch.setattr(GpuLease, "release", counted_give)

    [log] = eval(
        rebench(target=str(metr_target), tasks=["machine_check/gpu"], agent="noop"),
        solver=scripted(("bash", LOOK), ("submit", "done")),
        model="mockllm/model",
        epochs=2 * K,
        max_samples=2 * K,
        max_sandboxes=2 * K,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    samples = log.samples or []
    assert len(samples) == 2 * K and all(s.error is None for s in samples), [
        s.error for s in samples
    ]
    assert max(n for _, n in holding) == K  # the pool was full, never over-full
    assert count == 0  # every lease came back
    minors = {"GPU-fake-0": "nvidia3", "GPU-fake-1": "nvidia2"}  # see fake_gpus
    for sample in samples:
        out = sample.store[OUTPUTS][0].split()
        nodes = [line for line in out if line.startswith("nvidia")]
        [cuda] = [line.removeprefix("cuda=") for line in out if line.startswith("cuda=")]
        assert len(nodes) == 1 and nodes == [minors[cuda]]  # one GPU, the one CUDA names
        record = sample.store[GPUS_KEY]
        assert len(record["ids"]) == 1 and record["uuids"] == [cuda]
        # held for the whole sample (the command alone sleeps 1 s); nvidia-smi's figures
        assert record["held_seconds"] >= 1 and record["gpu_seconds"] == record["held_seconds"]
        index = int(cuda.removeprefix("GPU-fake-"))
        assert record["peak_memory_mib"] == 1000 + index
        assert record["mean_utilization_pct"] == 10 * index
    waited = [s.store[GPUS_KEY]["waited_seconds"] for s in samples]
    assert sum(w > 0.5 for w in waited) >= K  # the second K waited for the first
    # the analysis (and the report) count GPU time per run, and what nvidia-smi saw
    from labcoat.analysis import read_runs

    runs = read_runs([str(tmp_path / "logs")]).runs
    assert list(runs["gpus"]) == [1] * 2 * K
    assert all(runs["gpu_seconds"] >= 1)
    assert set(runs["gpu_peak_memory_mib"]) == {1000.0, 1001.0}

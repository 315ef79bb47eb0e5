"""A fake GPU machine for tests (CI has no GPU): `fake_gpus` gives four GPUs.

The machine's GPUs come from a fake driver folder (/proc/driver/nvidia/gpus/<bus>/
information, as the NVIDIA driver writes it) and fake device nodes (regular files, which a
sandbox binds where /dev/nvidiaN would be), and a fake `nvidia-smi` on PATH that reports
GPU i using 1000 + i MiB at 10 * i % utilization.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from labcoat.sandbox import _gpus, machine_gpus

BUSES = ["0000:1a:00.0", "0000:3b:00.0", "0000:5c:00.0", "0000:7d:00.0"]


@pytest.fixture
def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A machine with four GPUs whose device minors run backwards (so index != minor)."""
    driver, dev = tmp_path / "driver", tmp_path / "dev"
    dev.mkdir()
    for index, bus in enumerate(BUSES):
        minor = len(BUSES) - 1 - index
        (driver / bus).mkdir(parents=True)
        (driver / bus / "information").write_text(
            f"Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 42\n"
            f"GPU UUID: \t GPU-fake-{index}\nDevice Minor: \t {minor}\n"
        )
        (dev / f"nvidia{minor}").write_text(f"gpu minor {minor}\n")
    for control in ("nvidiactl", "nvidia-uvm"):
        (dev / control).write_text("control\n")
    # nvidia-smi's answer to the usage query: GPU i uses 1000 + i MiB at 10 * i %
    tools = tmp_path / "nvidia-bin"
    tools.mkdir()
    rows = "".join(f"GPU-fake-{i}, {i}, {1000 + i}, {10 * i}\\n" for i in range(len(BUSES)))
    (tools / "nvidia-smi").write_text(f"#!/bin/sh\nprintf '{rows}'\n")
    (tools / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setattr(_gpus, "DRIVER_GPUS", driver)
    monkeypatch.setattr(_gpus, "DEVICES", dev)
    monkeypatch.delenv("LABCOAT_GPUS", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("LABCOAT_SANDBOX_DIR", str(tmp_path / "sandboxes"))
    machine_gpus.cache_clear()
    yield dev
    machine_gpus.cache_clear()


@pytest.fixture
def declare_gpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """`declare_gpus(n)`: this machine declares n GPUs (LABCOAT_GPUS), none of them real;
    the next test sees the machine's own again."""

    def declare(count: int) -> None:
        monkeypatch.setenv("LABCOAT_GPUS", str(count))
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        machine_gpus.cache_clear()

    yield declare
    machine_gpus.cache_clear()

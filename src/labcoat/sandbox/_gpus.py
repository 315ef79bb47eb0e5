"""What GPUs this machine has, as labcoat sees them, and which of them this process may use.

The NVIDIA driver describes each GPU in /proc/driver/nvidia/gpus/<PCI bus id>/information
(its model, UUID and device minor, the N of /dev/nvidiaN); NVML and nvidia-smi number
GPUs in PCI bus order, and so does labcoat (`Gpu.index`). Without that folder, the device
nodes /dev/nvidia0, 1, ... are the GPUs (index = minor). `LABCOAT_GPUS=N` declares N GPUs
whatever the machine shows (0: none), for a node labcoat cannot see into and for tests.

A process whose `CUDA_VISIBLE_DEVICES` is set (Ray sets it to the GPUs it gave a task)
uses only those GPUs.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from labcoat._errors import LabcoatError

DECLARE_ENV = "LABCOAT_GPUS"
DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")
DEVICES = Path("/dev")
# the driver's control nodes: every CUDA process opens them, whichever GPU it uses
CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps")


@dataclass(frozen=True)
class Gpu:
    index: int
    """NVML's (and nvidia-smi's) number: the position in PCI bus order."""
    minor: int | None
    """N of /dev/nvidiaN; None for a declared GPU without a device node."""
    uuid: str | None = None
    model: str | None = None

    @property
    def node(self) -> Path | None:
        return DEVICES / f"nvidia{self.minor}" if self.minor is not None else None

    @property
    def cuda_id(self) -> str:
        """How CUDA_VISIBLE_DEVICES names it: the UUID where known, else the index (with
        CUDA_DEVICE_ORDER=PCI_BUS_ID, which the sandbox sets)."""
        return self.uuid or str(self.index)


def control_nodes() -> list[Path]:
    """The driver's device nodes (not any GPU's own) that this machine has."""
    return [DEVICES / name for name in CONTROL_NODES if (DEVICES / name).exists()]


def _declared() -> int | None:
    value = os.environ.get(DECLARE_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise LabcoatError(f"{DECLARE_ENV}={value!r}: expected a number of GPUs (0 for none)")
    return int(value)


def _field(text: str, name: str) -> str | None:
    match = re.search(rf"^{re.escape(name)}:\s*(.+?)\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


def _from_driver() -> list[Gpu]:
    found = []
    folders = sorted(DRIVER_GPUS.iterdir()) if DRIVER_GPUS.is_dir() else []
    for index, folder in enumerate(folders):
        try:
            text = (folder / "information").read_text()
        except OSError:
            continue
        minor = _field(text, "Device Minor")
        found.append(
            Gpu(
                index=index,
                minor=int(minor) if minor and minor.isdigit() else index,
                uuid=_field(text, "GPU UUID"),
                model=_field(text, "Model"),
            )
        )
    return found


def _from_nodes() -> list[Gpu]:
    minors = sorted(
        int(p.name.removeprefix("nvidia"))
        for p in DEVICES.glob("nvidia[0-9]*")
        if p.name.removeprefix("nvidia").isdigit()
    )
    return [Gpu(index=i, minor=m) for i, m in enumerate(minors)]


@functools.cache
def machine_gpus() -> tuple[Gpu, ...]:
    """Every GPU of this machine (declared ones where LABCOAT_GPUS says so)."""
    declared = _declared()
    if declared is not None:
        seen = _from_driver() or _from_nodes()
        if len(seen) >= declared:
            return tuple(seen[:declared])
        return tuple(Gpu(index=i, minor=None) for i in range(declared))
    return tuple(_from_driver() or _from_nodes())


def machine_has_gpu() -> bool:
    return bool(machine_gpus())


def usable_gpus() -> tuple[Gpu, ...]:
    """The GPUs this process may hand out: the machine's, or those of its
    CUDA_VISIBLE_DEVICES (indices or UUIDs) when that is set."""
    gpus = machine_gpus()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return gpus
    wanted = [v.strip() for v in visible.split(",") if v.strip()]
    chosen = []
    for name in wanted:
        for gpu in gpus:
            if name in (str(gpu.index), gpu.uuid) and gpu not in chosen:
                chosen.append(gpu)
    return tuple(chosen)

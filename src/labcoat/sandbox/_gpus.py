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
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from labcoat._errors import LabcoatError
from labcoat._util.run_choices import ANY_GPU_MODEL_ENV as ANY_GPU_MODEL_ENV  # its name here
from labcoat._util.run_choices import current_choices
from labcoat.sandbox._paths import SYSTEM_PATH

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


# where GPU nodes (Kubernetes' NVIDIA device plugin, say) put the driver outside the
# loader's cache; LD_LIBRARY_PATH and PATH name the others
DRIVER_LIBRARY_PLACES = ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")
DRIVER_TOOL_PLACES = ("/usr/local/nvidia/bin",)
DRIVER_LIBRARIES = ("libcuda.so", "libnvidia-ml.so")


def _places(variable: str, defaults: tuple[str, ...], holds: Callable[[Path], bool]) -> list[str]:
    candidates = [p for p in os.environ.get(variable, "").split(":") if p] + list(defaults)
    found: list[str] = []
    for place in candidates:
        path = Path(place)
        try:
            if place not in found and path.is_absolute() and path.is_dir() and holds(path):
                found.append(place)
        except OSError:  # a folder this user may not enter (root's, on a PATH `su` kept)
            continue
    return found


def driver_library_dirs() -> list[str]:
    """Folders of the driver's libraries (libcuda, libnvidia-ml) that a GPU sandbox puts
    on its LD_LIBRARY_PATH: the host's LD_LIBRARY_PATH loses them when it is cleared."""

    def holds(path: Path) -> bool:
        return any(any(path.glob(f"{name}*")) for name in DRIVER_LIBRARIES)

    return _places("LD_LIBRARY_PATH", DRIVER_LIBRARY_PLACES, holds)


def driver_tool_dirs() -> list[str]:
    """Folders outside the system's own that hold `nvidia-smi` (put on a GPU sandbox's PATH)."""
    found = _places("PATH", DRIVER_TOOL_PLACES, lambda p: (p / "nvidia-smi").exists())
    return [place for place in found if place not in SYSTEM_PATH]


DRIVER_FILE_PATTERNS = ("libcuda.so*", "libnvidia-*.so*", "libnvcuvid.so*")
DRIVER_TOOLS = ("nvidia-smi",)


def driver_files() -> list[Path]:
    """The driver's user-space files (libraries, nvidia-smi) wherever the host keeps them:
    the loader's cache and the places above. A sandbox on a root file system of its own
    gets them in a folder of their own."""
    folders = [*driver_library_dirs(), *_loader_folders()]
    found: dict[str, Path] = {}
    for folder in dict.fromkeys(folders):
        for pattern in DRIVER_FILE_PATTERNS:
            for path in sorted(Path(folder).glob(pattern)):
                found.setdefault(path.name, path)
    for folder in [*driver_tool_dirs(), *SYSTEM_PATH]:
        for tool in DRIVER_TOOLS:
            path = Path(folder, tool)
            if path.exists():
                found.setdefault(tool, path.resolve())
    return list(found.values())


def _loader_folders() -> list[str]:
    """Folders of the loader's cache that hold the driver's libcuda (`ldconfig -p`)."""
    try:
        listing = subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    folders = []
    for line in listing.splitlines():
        if "libcuda.so" in line and "=>" in line:
            folders.append(str(Path(line.split("=>", 1)[1].strip()).parent))
    return list(dict.fromkeys(folders))


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


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def is_model(gpu: Gpu, wanted: str) -> bool | None:
    """Whether the GPU is a `wanted` (a name such as `h100`, `a10`, `a100-80gb`: every word
    of it is a word of the GPU's model); None when its model is unknown."""
    if gpu.model is None:
        return None
    return _tokens(wanted) <= _tokens(gpu.model)


def gpu_shortfall(count: int, model: str | None = None) -> str | None:
    """Why this process cannot give a task `count` GPUs of `model`, or None when it can
    (a GPU of unknown model counts as any; the run's `--any-gpu-model` skips the model)."""
    if count <= 0:
        return None
    usable = usable_gpus()
    wanted = f" ({model})" if model else ""
    if count > len(usable):
        return f"needs {count} GPU(s){wanted}; this machine has {len(usable) or 'none'}"
    if not model or current_choices().any_gpu_model:  # the run's --any-gpu-model
        return None
    fitting = [g for g in usable if is_model(g, model) is not False]
    if len(fitting) >= count:
        return None
    models = ", ".join(sorted({g.model or "unknown" for g in usable}))
    return (
        f"needs {count} GPU(s){wanted}; this machine has {len(fitting)} of that model "
        f"({models}; --any-gpu-model runs it anyway)"
    )

"""What ran a sample: labcoat's build (version, and commit when run from a checkout) and
the machine (CPU, cores, memory, GPUs and their driver). Read once per process."""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from labcoat._version import __version__
from labcoat.sandbox import machine_gpus, nvidia_smi

PACKAGE = Path(__file__).resolve().parents[1]
_GIT_TIMEOUT_S = 5
_SMI_TIMEOUT_S = 10
CPUINFO = Path("/proc/cpuinfo")
MEMINFO = Path("/proc/meminfo")
DRIVER_VERSION = Path("/proc/driver/nvidia/version")


def _git(*args: str) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    # the package's own repository, whatever the caller's environment points git at
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            [git, "-C", str(PACKAGE), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def labcoat_build() -> dict[str, Any]:
    """`{"version", "commit", "dirty"}`; commit and dirty are None unless labcoat runs from
    a git checkout of itself (an installed copy inside another repository is not one)."""
    record: dict[str, Any] = {"version": __version__, "commit": None, "dirty": None}
    # the package's files must be tracked there, or the repository is someone else's
    if _git("ls-files", "--error-unmatch", "__init__.py") is None:
        return record
    commit = _git("rev-parse", "HEAD")
    if commit:
        status = _git("status", "--porcelain", "--untracked-files=no")
        record["commit"] = commit
        record["dirty"] = bool(status) if status is not None else None
    return record


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def cpu_model() -> str | None:
    text = _read(CPUINFO)
    for key in ("model name", "Model", "Hardware", "cpu model"):
        match = re.search(rf"^{key}\s*:\s*(.+?)\s*$", text, re.MULTILINE)
        if match:
            return match.group(1)
    return platform.processor() or platform.machine() or None


def memory_gb() -> float | None:
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", _read(MEMINFO), re.MULTILINE)
    return round(int(match.group(1)) / 2**20, 1) if match else None


def _smi() -> list[tuple[str, str]]:
    """(model, driver) per GPU from nvidia-smi, where it is found; [] otherwise."""
    smi = nvidia_smi()
    if smi is None:
        return []
    try:
        done = subprocess.run(
            [smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=_SMI_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [line.split(",") for line in done.stdout.splitlines() if "," in line]
    return [(r[0].strip(), r[1].strip()) for r in rows] if done.returncode == 0 else []


def gpu_fields() -> dict[str, Any]:
    """The machine's GPUs: how many, their model(s) and the driver's version."""
    gpus = machine_gpus()
    models = [g.model for g in gpus if g.model]
    match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?([\d.]+)", _read(DRIVER_VERSION))
    driver = match.group(1) if match else None
    if gpus and (len(models) < len(gpus) or driver is None):
        smi = _smi()  # the driver's files did not say: ask its tool
        models = models if len(models) == len(gpus) else [m for m, _ in smi]
        driver = driver or next((d for _, d in smi), None)
    return {
        "gpus": len(gpus),
        "gpu": " + ".join(dict.fromkeys(models)) or None,
        "gpu_driver": driver,
    }


@functools.cache
def hardware() -> dict[str, Any]:
    """This machine, as a score records it (the sample's own share is in its limits)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "memory_gb": memory_gb(),
        "arch": platform.machine() or None,
        **gpu_fields(),
    }

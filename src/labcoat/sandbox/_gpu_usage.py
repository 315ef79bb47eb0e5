"""What a sample's GPUs did while it held them: peak memory and mean utilization, read
from `nvidia-smi` every few seconds (the driver's own tool; no Python binding needed).

Where there is no `nvidia-smi` (no driver, declared GPUs), nothing is sampled and the
figures are None: unknown, never 0.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from pathlib import Path

from labcoat.sandbox._gpus import Gpu, driver_tool_dirs

SAMPLE_SECONDS = 5.0
QUERY = "--query-gpu=uuid,index,memory.used,utilization.gpu"


def nvidia_smi() -> str | None:
    found = shutil.which("nvidia-smi")
    if found:
        return found
    for folder in driver_tool_dirs():
        if (Path(folder) / "nvidia-smi").exists():
            return str(Path(folder) / "nvidia-smi")
    return None


def read_usage(smi: str) -> dict[str, tuple[float, float]]:
    """{uuid or index: (memory used MiB, utilization %)} of every GPU, now."""
    done = subprocess.run(
        [smi, QUERY, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30
    )
    found: dict[str, tuple[float, float]] = {}
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        with contextlib.suppress(ValueError):
            memory, utilization = float(parts[2]), float(parts[3])
            found[parts[0]] = found[parts[1]] = (memory, utilization)
    return found


class GpuUsage:
    """Samples the GPUs of one lease in a thread from `start()` to `stop()`."""

    def __init__(self, gpus: tuple[Gpu, ...], interval: float = SAMPLE_SECONDS) -> None:
        self.gpus = gpus
        self.interval = interval
        self.peak_memory_mib: float | None = None
        self._utilization: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._smi = nvidia_smi() if gpus else None

    def start(self) -> None:
        if self._smi is not None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="gpu-usage")
            self._thread.start()

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.interval):
                return

    def _sample(self) -> None:
        assert self._smi is not None
        try:
            now = read_usage(self._smi)
        except (OSError, subprocess.TimeoutExpired):
            return
        mine = [now.get(gpu.uuid or "") or now.get(str(gpu.index)) for gpu in self.gpus]
        seen = [m for m in mine if m is not None]
        if not seen:
            return
        memory = max(m for m, _ in seen)
        self.peak_memory_mib = max(memory, self.peak_memory_mib or 0.0)
        self._utilization.append(sum(u for _, u in seen) / len(seen))

    def stop(self) -> None:
        """No more samples (a reading under way finishes in its own time: the thread is a
        daemon, and waiting for it would hold up the event loop that closes the sample)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None

    def record(self) -> dict[str, float | int | None]:
        mean = sum(self._utilization) / len(self._utilization) if self._utilization else None
        return {
            "peak_memory_mib": self.peak_memory_mib,
            "mean_utilization_pct": round(mean, 1) if mean is not None else None,
            "usage_samples": len(self._utilization),
        }

"""Fixed time limits in tests, stretched by how busy the machine is.

A limit that covers a run's setup as well as the work it limits (Inspect's sample time
limit starts before the task's own setup steps) fails when the setup alone takes it on
a loaded machine. `scaled(seconds)` stretches such a limit by the 1-minute load per CPU
(never below 1, at most `MAX_SCALE`), or by `LABCOAT_TEST_TIME_SCALE` where it is set.
"""

from __future__ import annotations

import math
import os

SCALE_ENV = "LABCOAT_TEST_TIME_SCALE"
MAX_SCALE = 6.0


def load_scale() -> float:
    """How much slower than an idle machine this one runs now (1.0: idle)."""
    if os.environ.get(SCALE_ENV):
        return max(1.0, float(os.environ[SCALE_ENV]))
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available here
        return 1.0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(MAX_SCALE, max(1.0, load / (cpus or 1)))


def scaled(seconds: float) -> int:
    """`seconds`, stretched by the machine's load, in whole seconds."""
    return math.ceil(seconds * load_scale())

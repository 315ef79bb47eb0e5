"""What GPUs this machine has, as labcoat sees them."""

from __future__ import annotations

import functools
import glob
import os


@functools.cache
def machine_has_gpu() -> bool:
    """NVIDIA device nodes present, unless LABCOAT_GPUS=1 or 0 says otherwise (a GPU labcoat
    cannot see as /dev/nvidia*, or a test cluster's node that declares one)."""
    declared = os.environ.get("LABCOAT_GPUS")
    if declared in ("0", "1"):
        return declared == "1"
    return bool(glob.glob("/dev/nvidia[0-9]*"))

"""How many samples one run may hold: a bound checked before anything is built for it
(`--epochs 1000000` would otherwise fill memory before the first sample starts)."""

from __future__ import annotations

from labcoat._errors import LabcoatError
from labcoat._util.env import env_value
from labcoat._util.limits import MAX_RUN_SAMPLES


def check_run_samples(samples: int, epochs: int) -> None:
    """A run of `samples` samples, `epochs` times each, stays within MAX_RUN_SAMPLES (or
    LABCOAT_MAX_RUN_SAMPLES)."""
    limit = int(env_value("LABCOAT_MAX_RUN_SAMPLES", MAX_RUN_SAMPLES))
    if samples * epochs > limit:
        raise LabcoatError(
            f"--epochs {epochs}: {samples:,} sample(s) × {epochs:,} epoch(s) is "
            f"{samples * epochs:,} samples, more than one run may hold ({limit:,}; "
            "LABCOAT_MAX_RUN_SAMPLES raises it)"
        )

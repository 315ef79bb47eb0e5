"""The integrity flag vocabulary: where a run's flags live, and how every table reads them.

Graders write the flags, `labcoat inspect` adds its own, and the tables and reports read
them; all of them name the keys and read the flags here, so they agree on one format.
"""

from __future__ import annotations

from typing import Any

INTEGRITY_FLAGS = "integrity_flags"
"""Score (or, for a run without a score, sample) metadata key: one-line strings saying
why a run is suspect. A flagged run keeps its score and is marked in every table."""


INSPECT_KEY = "labcoat_inspect"
"""Log metadata key `labcoat inspect` writes: when it read the log, what it found."""


def flags_of(metadata: dict[str, Any] | None) -> list[str]:
    """The integrity flags in a score's (or sample's) metadata."""
    raw = (metadata or {}).get(INTEGRITY_FLAGS) or []
    if isinstance(raw, str):
        return [raw]
    return [str(f) for f in raw if f] if isinstance(raw, list | tuple) else []


def run_flags(sample: Any) -> list[str]:
    """Every integrity flag of one run (an Inspect `EvalSample`): its scores' and its own."""
    found: list[str] = []
    for score in (getattr(sample, "scores", None) or {}).values():
        found += flags_of(score.metadata)
    found += flags_of(getattr(sample, "metadata", None))
    return list(dict.fromkeys(found))

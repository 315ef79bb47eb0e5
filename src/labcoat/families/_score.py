"""The score shape every family's scorer returns, so validate and reports read one format.

`Score.value` is a dict with at least:
- `raw`: the task's own measure (a runtime, a loss, a pass rate, a rubric score), or None;
- `normalized`: 0 = the starting point / nothing done, 1 = the reference (may exceed 1);
- optionally `weight`: the sample's weight within its task (default 1).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, Score, metric

from labcoat.families._provenance import PROVENANCE, provenance_record
from labcoat.sandbox import sandbox_record

RAW = "raw"
NORMALIZED = "normalized"
SANDBOX = "sandbox"
"""Score metadata: the sample's isolation mode and its limits' and disk's mechanisms."""
WEIGHT = "weight"
"""Optional: how much a sample counts in its task's mean (e.g. a snippet's code lines)."""


def research_score(
    raw: float | None,
    normalized: float,
    *,
    explanation: str | None = None,
    metadata: dict[str, Any] | None = None,
    **extra_values: float | None,
) -> Score:
    value: dict[str, Any] = {RAW: raw, NORMALIZED: normalized, **extra_values}
    metadata = dict(metadata or {})
    # every score says how its sample was isolated: a weaker mode must show in a table
    metadata.setdefault(SANDBOX, sandbox_record())
    # and what it was graded with and ran under: task contents, grader, judge, machine, limits
    metadata.setdefault(PROVENANCE, provenance_record(metadata))
    return Score(value=value, explanation=explanation, metadata=metadata)


def normalized_of(score: Score | None) -> float | None:
    """The normalized figure of a labcoat score, or None when absent."""
    if score is None or not isinstance(score.value, dict):
        return None
    value = score.value.get(NORMALIZED)
    return float(value) if isinstance(value, int | float) else None


def raw_of(score: Score | None) -> float | None:
    if score is None or not isinstance(score.value, dict):
        return None
    value = score.value.get(RAW)
    return float(value) if isinstance(value, int | float) else None


# --- one rule for errors (every table uses it; integrity flags: labcoat.integrity) ------

ERROR_SCORE = 0.0
"""What a run without a valid score counts as in every mean: 0 normalized, the floor of
every family's scale (RE-Bench's starting solution; nothing passed or achieved in the
others), so an error never counts above any scored run of its task and never raises a
mean; the tables show how many runs errored beside it."""

ERROR_SCORE_RULE = "errored runs (no valid score) count as 0 normalized in the mean"
ERROR_RULE = f"{ERROR_SCORE_RULE}; the errors column counts them"


def mean_over_runs(
    values: Sequence[float | None], weights: Sequence[float] | None = None
) -> float | None:
    """The weighted mean of runs' normalized scores under the error rule.

    None stands for an errored run and counts as `ERROR_SCORE`; NaN (a run of a task
    without a normalized scale) is left out. None when no run has a normalized value.
    """
    weights = list(weights) if weights is not None else [1.0] * len(values)
    scored = [v for v in values if v is not None]
    if not values or (scored and not any(math.isfinite(v) for v in scored)):
        return None  # nothing ran, or the task has no normalized scale
    pairs = [
        (ERROR_SCORE if v is None else v, w)
        for v, w in zip(values, weights, strict=True)
        if v is None or math.isfinite(v)
    ]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total > 0 else None


def _known(scores: list[SampleScore]) -> list[float]:
    values = (s.score.value for s in scores)
    return [
        float(v)
        for v in values
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]


@metric
def mean_scored() -> Metric:
    """Mean over the samples that have this figure (a `raw` of None — no valid score — is
    left out, where Inspect's `mean` would warn and count it as 0)."""

    def compute(scores: list[SampleScore]) -> float:
        known = _known(scores)
        return sum(known) / len(known) if known else math.nan

    return compute


@metric
def stderr_scored() -> Metric:
    """Standard error of the mean over the samples that have this figure."""

    def compute(scores: list[SampleScore]) -> float:
        known = _known(scores)
        if len(known) < 2:
            return 0.0 if known else math.nan
        return statistics.stdev(known) / math.sqrt(len(known))

    return compute

"""RE-Bench: intermediate scores from the score log, normalized with the task's spec.

Relies on: score metadata `score_log` (else store `labcoat:rebench:score_log`), each
entry with `score` (raw), `final`, `elapsed_seconds`, `working_seconds`, `tokens`,
`cost`, `timestamp`; score metadata `score_spec` with `start`, `reference`, `final`
("best" | "last"). Normalized = (raw - start) / (reference - start); a missing raw
(invalid attempt) counts as the starting solution, 0, as the scorer does.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.log import EvalSample
from inspect_ai.scorer import Score

from labcoat.analysis._family import BEST, LAST, Family, Row, num
from labcoat.families.rebench._scoring import SCORE_LOG


def _spec(sample: EvalSample, score: Score | None) -> dict[str, Any] | None:
    spec = (score.metadata or {}).get("score_spec") if score is not None else None
    if spec is None:
        spec = ((sample.metadata or {}).get("rebench") or {}).get("score")
    return spec if isinstance(spec, dict) else None


def normalize(raw: float | None, spec: dict[str, Any] | None) -> float | None:
    start, reference = num((spec or {}).get("start")), num((spec or {}).get("reference"))
    if start is None or reference is None or start == reference:
        return None
    return 0.0 if raw is None else (raw - start) / (reference - start)


class ReBench(Family):
    name = "rebench"

    def score_points(self, sample: EvalSample, score: Score | None) -> list[Row]:
        log = (score.metadata or {}).get("score_log") if score is not None else None
        if not isinstance(log, list):
            log = (sample.store or {}).get(SCORE_LOG)
        if not isinstance(log, list):
            return []
        spec = _spec(sample, score)
        rows = []
        for entry in log:
            if not isinstance(entry, dict):
                continue
            raw = num(entry.get("score"))
            rows.append(
                {
                    "elapsed_seconds": num(entry.get("elapsed_seconds")),
                    "working_seconds": num(entry.get("working_seconds")),
                    "tokens": num(entry.get("tokens")),
                    "cost": num(entry.get("cost")),
                    "timestamp": num(entry.get("timestamp")),
                    "raw": raw,
                    "normalized": normalize(raw, spec),
                    "final": bool(entry.get("final")),
                }
            )
        return rows

    def curve_rule(self, sample: EvalSample, score: Score | None) -> str:
        spec = _spec(sample, score)
        return LAST if spec and spec.get("final") == "last" else BEST

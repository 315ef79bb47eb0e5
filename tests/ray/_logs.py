"""Reading what a `--ray` run left in its log dir."""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai.log import EvalLog, read_eval_log


def merged_logs(log_dir: Path) -> list[EvalLog]:
    return [read_eval_log(str(p)) for p in sorted(log_dir.glob("*.eval"))]


def attempts(log_dir: Path) -> dict[str, list[dict]]:
    """Attempt markers by sample id (all epochs), in the order they started."""
    out: dict[str, list[dict]] = {}
    for marker in sorted(log_dir.glob("*.shards/*/*.attempt")):
        record = json.loads(marker.read_text())
        out.setdefault(record["sample_id"], []).append(record)
    for records in out.values():
        records.sort(key=lambda r: r["started"])
    return out

"""Human baseline runs from a CSV, on the same tables as the agents' runs.

Columns (header row required; extra columns are ignored):
- `task`: the task id as the logs name it (e.g. `prefix_sum/main`);
- `run_id`: one human attempt; several rows with the same run id are its scores over time;
- `elapsed_minutes`: time into the attempt when the score was reached;
- `score`: the normalized score at that time (0 = starting point, 1 = reference);
- optional `label` (default `human`) and `cost` (dollars for the whole attempt).

An attempt's final score is its latest row's score; its length is its latest time.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labcoat._errors import LabcoatError

REQUIRED = ("task", "run_id", "elapsed_minutes", "score")
HUMAN = "human"


@dataclass(frozen=True)
class HumanRuns:
    runs: pd.DataFrame
    scores: pd.DataFrame


def _number(text: str | None, where: str) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError as ex:
        raise LabcoatError(f"{where}: not a number: {text!r}") from ex
    if not math.isfinite(value):
        raise LabcoatError(f"{where}: not a finite number: {text!r}")
    return value


def read_human_csv(path: str | Path) -> HumanRuns:
    """Human attempts as runs (agent `human`) and their scores over time."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise LabcoatError(f"{path}: missing column(s) {', '.join(missing)}")
        points: dict[tuple[str, str, str], list[dict]] = {}
        costs: dict[tuple[str, str, str], float | None] = {}
        for line, row in enumerate(reader, start=2):
            where = f"{path}:{line}"
            minutes = _number(row["elapsed_minutes"], f"{where}: elapsed_minutes")
            score = _number(row["score"], f"{where}: score")
            if minutes is None:
                raise LabcoatError(f"{where}: elapsed_minutes is empty")
            key = ((row.get("label") or HUMAN).strip(), row["task"].strip(), row["run_id"].strip())
            points.setdefault(key, []).append({"minutes": minutes, "score": score})
            cost = _number(row.get("cost"), f"{where}: cost")
            if cost is not None:
                costs[key] = cost
    runs, scores = [], []
    attempt: dict[tuple[str, str], int] = {}
    for (label, task, run_id), rows in points.items():
        epoch = attempt[label, task] = attempt.get((label, task), 0) + 1
        rows.sort(key=lambda r: r["minutes"])
        run = f"human/{label}/{task}/{run_id}"
        last = rows[-1]
        runs.append(
            {
                "run": run,
                "log": str(path),
                "name": path.name,
                "task_id": task,
                "model": HUMAN,
                "agent": HUMAN,
                "variant": "",
                "label": label,
                "epoch": epoch,
                "sample_id": run_id,
                "samples": 1,
                "sample_errors": 0,
                "status": "ok" if last["score"] is not None else "error",
                "error": None if last["score"] is not None else "no score",
                "normalized": last["score"],
                "curve_rule": "last",
                "run_seconds": last["minutes"] * 60,
                "cost": costs.get((label, task, run_id)),
                "tool_calls": None,
                "imported": True,  # from a CSV, not run in labcoat's sandbox
            }
        )
        for i, r in enumerate(rows):
            scores.append(
                {
                    "run": run,
                    "task_id": task,
                    "label": label,
                    "epoch": epoch,
                    "index": i,
                    "source": "human",
                    "elapsed_seconds": r["minutes"] * 60,
                    "normalized": r["score"],
                    "final": i == len(rows) - 1,
                }
            )
    return HumanRuns(pd.DataFrame(runs), pd.DataFrame(scores))

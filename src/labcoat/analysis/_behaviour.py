"""Behaviour: tool calls by phase of the run, action density, and its link to the score.

Phases, per run:
- `thirds`: the run's wall-clock length in three equal parts.
- `detected`: `start` until the first intermediate score (the first measured result),
  `ramp` while the credited score still improves (until the time of its last
  improvement), `steady` after. Runs without intermediate scores fall back to thirds
  (start/ramp/steady = first/second/final third); `phase_source` says which was used.

Action density = tool calls per hour of the run's wall-clock length. Its correlation
with the final score is taken across scored runs (Pearson r and Spearman rho).
"""

from __future__ import annotations

import math
from typing import Literal

import pandas as pd

from labcoat.analysis._columns import TASK_KEYS
from labcoat.analysis._data import RunData
from labcoat.analysis._family import LAST
from labcoat.analysis._stats import pearson, spearman

Phases = Literal["thirds", "detected"]
THIRDS = ("first third", "second third", "final third")
DETECTED = ("start", "ramp", "steady")


def _boundaries(data: RunData) -> dict[str, tuple[float, float, str]]:
    """Per run with intermediate scores: (end of start, end of ramp) in seconds.

    Only scores the agent asked for count (not the final scoring after it stopped).
    """
    scores = data.scores
    asked = scores[(scores["source"] == "intermediate") & (scores["final"] != True)]  # noqa: E712
    rules = dict(zip(data.runs["run"], data.runs["curve_rule"], strict=True))
    out = {}
    for run, group in asked.groupby("run", sort=False):
        xs = pd.to_numeric(group["elapsed_seconds"], errors="coerce")
        ys = pd.to_numeric(group["normalized"], errors="coerce").fillna(0.0)
        pts = sorted((x, y) for x, y in zip(xs, ys, strict=True) if not math.isnan(x))
        if not pts:
            continue
        credited, last_change = pts[0][1], pts[0][0]
        for x, y in pts[1:]:
            new = y if rules.get(run) == LAST else max(credited, y)
            if new != credited:
                credited, last_change = new, x
        out[str(run)] = (pts[0][0], last_change, "scores")
    return out


def phase_of(elapsed: float, length: float, cuts: tuple[float, float] | None = None) -> int:
    """0, 1 or 2: the phase of a moment `elapsed` seconds into a run `length` long."""
    if cuts is not None:
        return 0 if elapsed < cuts[0] else 1 if elapsed <= cuts[1] else 2
    if length <= 0:
        return 0
    return min(2, max(0, int(3 * elapsed / length)))


def tool_phases(data: RunData, phases: Phases = "thirds") -> pd.DataFrame:
    """Tool calls per run, phase and tool (long format; absent combinations are 0)."""
    names = THIRDS if phases == "thirds" else DETECTED
    cuts = _boundaries(data) if phases == "detected" else {}
    length = dict(
        zip(data.runs["run"], pd.to_numeric(data.runs["run_seconds"], errors="coerce"), strict=True)
    )
    rows = []
    for run, elapsed, function in zip(
        data.tool_calls["run"],
        data.tool_calls["elapsed_seconds"],
        data.tool_calls["function"],
        strict=True,
    ):
        total = length.get(run)
        if elapsed is None or total is None or math.isnan(total) or math.isnan(elapsed):
            continue
        cut = cuts.get(run)
        phase = phase_of(float(elapsed), float(total), cut[:2] if cut else None)
        rows.append(
            {
                "run": run,
                "phase": names[phase],
                "function": function,
                "phase_source": cut[2] if cut else "thirds",
            }
        )
    calls = pd.DataFrame(rows, columns=["run", "phase", "function", "phase_source"])
    counts = calls.groupby(["run", "phase", "function", "phase_source"]).size()
    out = counts.rename("calls").reset_index()
    meta = data.runs[["run", *TASK_KEYS]]
    return out.merge(meta, on="run", how="left")[
        ["run", *TASK_KEYS, "phase", "phase_source", "function", "calls"]
    ]


def phase_summary(data: RunData, phases: Phases = "thirds") -> pd.DataFrame:
    """Mean tool calls per run by (family, label, phase, tool), runs with none counting 0."""
    names = THIRDS if phases == "thirds" else DETECTED
    long = tool_phases(data, phases)
    active = data.runs[pd.to_numeric(data.runs["tool_calls"], errors="coerce") > 0]
    rows = []
    for (family, label), runs in active.groupby(["family", "label"], sort=True):
        mine = long[long["run"].isin(runs["run"])]
        for phase in names:
            for function in sorted(mine["function"].unique()):
                calls = mine[(mine["phase"] == phase) & (mine["function"] == function)]["calls"]
                rows.append(
                    {
                        "family": family,
                        "label": label,
                        "phase": phase,
                        "function": function,
                        "runs": len(runs),
                        "mean_calls": calls.sum() / len(runs),
                    }
                )
    return pd.DataFrame(
        rows, columns=["family", "label", "phase", "function", "runs", "mean_calls"]
    )


def action_density(data: RunData) -> pd.DataFrame:
    """Per run: tool calls, hours, calls per hour, and the final normalized score."""
    runs = data.runs
    hours = pd.to_numeric(runs["run_seconds"], errors="coerce") / 3600
    calls = pd.to_numeric(runs["tool_calls"], errors="coerce")
    density = (calls / hours).where(hours > 0)
    return pd.DataFrame(
        {
            "run": runs["run"],
            "family": runs["family"],
            "task_id": runs["task_id"],
            "label": runs["label"],
            "status": runs["status"],
            "tool_calls": calls,
            "hours": hours,
            "density": density,
            "normalized": pd.to_numeric(runs["normalized"], errors="coerce"),
        }
    )


def density_correlation(data: RunData, by: tuple[str, ...] = ("family",)) -> pd.DataFrame:
    """Pearson r and Spearman rho of action density vs final score across scored runs,
    per group of `by` and over all runs (group `all`). Runs without tool calls, without a
    length or without a score are left out and counted in `excluded`."""
    df = action_density(data)
    usable = (
        (df["status"] != "error")
        & (df["tool_calls"] > 0)
        & df["density"].notna()
        & df["normalized"].notna()
    )
    groups = [(("all",) * len(by), df, usable)]
    if by:
        groups += [
            ((k,) if isinstance(k, str) else k, g, usable[g.index])
            for k, g in df.groupby(list(by), sort=True)
        ]
    rows = []
    for key, group, ok in groups:
        sub = group[ok]
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n": len(sub),
                "excluded": int((~ok).sum()),
                "pearson": pearson(sub["density"].tolist(), sub["normalized"].tolist()),
                "spearman": spearman(sub["density"].tolist(), sub["normalized"].tolist()),
            }
        )
    return pd.DataFrame(rows, columns=[*by, "n", "excluded", "pearson", "spearman"])

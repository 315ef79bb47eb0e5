"""The newest grading of each run: `labcoat regrade`'s logs replace the scores they redo.

A regrade's log (task metadata `labcoat_regrade`) is not a run of its own: each of its
samples names the original sample (its uuid, in the store), and the original's scores
are swapped for the newest regrade's before the sample's rows are made. The sample rows
say so (`regraded_from`: the old normalized score; `grader`; `regraded_at`), and
`regrade_changes` lists every swap.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pandas as pd
from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from labcoat.analysis._family import Row
from labcoat.families._score import NORMALIZED
from labcoat.regrade import ORIGINAL, REGRADE_META, version_label
from labcoat.regrade._find import score_figures

logger = logging.getLogger(__name__)

COLUMNS = ["regraded_from", "grader", "regraded_at"]
CHANGES = ["family", "task_id", "sample_id", "epoch", "old", "new", "grader", "regraded_at", "log"]


def original_log(log: EvalLog) -> str:
    return str((log.eval.metadata or {}).get(REGRADE_META, {}).get("original_log") or "")


@dataclass
class _Newest:
    sample: EvalSample
    grader: str
    at: str


@dataclass
class Regrades:
    """The newest regrade of each original sample, by the original's uuid."""

    newest: dict[str, _Newest] = field(default_factory=dict)

    def add(self, log: EvalLog, location: str) -> None:
        meta = (log.eval.metadata or {}).get(REGRADE_META) or {}
        at = str(meta.get("regraded_at") or log.eval.created)
        grader = version_label(meta.get("grader"))
        samples = read_eval_log(location, exclude_fields={"messages", "events"}).samples or []
        for sample in samples:
            original = (sample.store or {}).get(ORIGINAL)
            if not isinstance(original, dict) or sample.error is not None or not sample.scores:
                continue  # a regrade that gave no score leaves the original's standing
            uuid = str(original.get("uuid") or "")
            held = self.newest.get(uuid)
            if uuid and (held is None or held.at < at):
                self.newest[uuid] = _Newest(sample, grader, at)

    def apply(self, sample: EvalSample) -> tuple[EvalSample, Row]:
        """`sample` with its newest grading's scores, and the columns saying so."""
        found = self.newest.get(str(sample.uuid or ""))
        if found is None:
            return sample, {}
        old = score_figures(sample)[NORMALIZED]
        regraded = sample.model_copy(update={"scores": found.sample.scores})
        row = {"regraded_from": old, "grader": found.grader, "regraded_at": found.at}
        return regraded, row


def collect(regrade_logs: list[tuple[EvalLog, str]]) -> Regrades:
    regrades = Regrades()
    for header, location in regrade_logs:
        try:
            regrades.add(header, location)
        except Exception as ex:  # a broken regrade log: the originals keep their scores
            logger.warning("skipped regrade log %s: %s", location, ex)
    return regrades


def regrade_changes(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per regraded sample: old → new normalized score, grader and time."""
    if samples.empty or "grader" not in samples:
        return pd.DataFrame(columns=CHANGES)
    done = samples[samples["grader"].notna()]
    return pd.DataFrame(
        {
            "family": done["family"],
            "task_id": done["task_id"],
            "sample_id": done["sample_id"],
            "epoch": done["epoch"],
            "old": done["regraded_from"],
            "new": done["normalized"],
            "grader": done["grader"],
            "regraded_at": done["regraded_at"],
            "log": done["log"],
        },
        columns=CHANGES,
    ).reset_index(drop=True)

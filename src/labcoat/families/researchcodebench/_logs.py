"""Per-snippet results from labcoat's own logs, or from upstream's `overall_stats.json`.

A labcoat log of a researchcodebench run has one sample per snippet and epoch; epoch k
is completion index k - 1. Runs are told apart by a label: the model for the research
agent (`oracle`/`noop` otherwise), with ` (no paper)` and ` [agent mode]` added for
those variants. When logs repeat a (run, snippet, completion) — an eval set that was
resumed — the most recent log wins.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.eval_logs import Warn, unreadable
from labcoat.families._score import NORMALIZED
from labcoat.families.researchcodebench._aggregate import SnippetResult, read_overall_stats
from labcoat.families.researchcodebench._discover import FAMILY

logger = logging.getLogger(__name__)


def run_label(log: EvalLog) -> str:
    meta = log.eval.metadata or {}
    agent = str(meta.get("agent", log.eval.task_args.get("agent", "research")))
    label = log.eval.model if agent == "research" else agent
    if meta.get("with_paper") is False:
        label += " (no paper)"
    if meta.get("mode") == "agent":
        label += " [agent mode]"
    return label


def _is_ours(log: EvalLog) -> bool:
    return (log.eval.metadata or {}).get("labcoat_family") == FAMILY


def records_from_log(log: EvalLog) -> tuple[list[SnippetResult], int]:
    """The graded snippets of one log, and how many samples had no score (errors)."""
    label = run_label(log)
    out: list[SnippetResult] = []
    unscored = 0
    for sample in log.samples or []:
        score = next(iter((sample.scores or {}).values()), None)
        meta = (sample.metadata or {}).get(FAMILY)
        value = score.value if score is not None else None
        if sample.error is not None or not isinstance(value, dict) or not meta:
            unscored += 1
            continue
        out.append(
            SnippetResult(
                paper=meta["paper"],
                snippet=meta["snippet"],
                weight=int(meta["weight"]),
                completion=sample.epoch - 1,
                passed=value.get(NORMALIZED) == 1,
                model=label,
            )
        )
    return out, unscored


def read_labcoat_logs(path: Path, warn: Warn | None = None) -> tuple[list[SnippetResult], int]:
    """Records of every researchcodebench log at `path` (a log file or a log folder).

    In a folder, a log that cannot be read is skipped with a warning (`warn`, else the
    logger); a single file that cannot be read is an error.
    """
    folder = path.is_dir()
    locations = [info.name for info in list_eval_logs(str(path))] if folder else [str(path)]
    logs = []
    for location in locations:
        try:
            header = read_eval_log(location, header_only=True)
            if _is_ours(header):
                logs.append(read_eval_log(location))
        except Exception as ex:  # the file's fault: say which, read the others
            if not folder:
                raise LabcoatError(unreadable(location, ex)) from None
            (warn or logger.warning)(unreadable(location, ex))
    if not logs:
        raise LabcoatError(f"{path}: no logs of a researchcodebench run")
    latest: dict[tuple[str, str, str, int], SnippetResult] = {}
    unscored = 0
    for log in sorted(logs, key=lambda log: log.eval.created):
        records, errors = records_from_log(log)
        unscored += errors
        for r in records:
            latest[(r.model, r.paper, r.snippet, r.completion)] = r
    return list(latest.values()), unscored


def _looks_like_overall_stats(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if isinstance(data, dict) and "results" in data and "eval" not in data:
        return data
    return None


def load_results(
    path: Path, warn: Warn | None = None
) -> tuple[list[SnippetResult], int, dict[str, Any] | None]:
    """(records, samples without a score, the overall_stats data when that is the input).

    `path`: upstream's `overall_stats.json`, or a labcoat log (`.eval`/`.json`) or a
    folder of them.
    """
    if not path.exists():
        raise LabcoatError(f"{path}: no such file or directory")
    if path.is_file() and path.suffix == ".json":
        data = _looks_like_overall_stats(path)
        if data is not None:
            return read_overall_stats(path), 0, data
    if path.is_file() and path.suffix not in (".eval", ".json"):
        raise TaskDataError(path, None, "expected overall_stats.json or a labcoat .eval log")
    records, unscored = read_labcoat_logs(path, warn)
    return records, unscored, None

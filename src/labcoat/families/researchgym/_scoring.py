"""Final scoring: the grader in a protected sandbox, then metrics, blocklist, git history.

`Score.value` holds `normalized` (mean normalized performance over primary sub-tasks:
what `labcoat validate` checks), `raw` (= `completion_rate`, the share of sub-tasks with a
valid result), `improved` (1/0) and `improvement` over the best baseline,
`self_reported` (1 when the grader read results the agent wrote), and per sub-task
`raw/<id>` and `normalized/<id>`. The metadata has the details, including
whether the scores are self-reported.
"""

from __future__ import annotations

import json
import math
from typing import Any

from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import store

from labcoat.families._score import NORMALIZED, RAW, mean_scored, research_score, stderr_scored
from labcoat.families.researchgym._extract import (
    filled_method_rows,
    json_value,
    regex_value,
    table_value,
)
from labcoat.families.researchgym._folder import DESCRIPTION
from labcoat.families.researchgym._git import capture_history
from labcoat.families.researchgym._grading import GRADE_OUTPUT, GraderRun, run_grader
from labcoat.families.researchgym._metrics import RunSummary, summarize
from labcoat.families.researchgym._sample import SampleInfo
from labcoat.families.researchgym._sidecar import GradingSpec, Sidecar
from labcoat.grading import agent_workspace, network_attempts, stop_agent_processes
from labcoat.integrity import scan_messages

COMPLETION = "completion_rate"
IMPROVED = "improved"
IMPROVEMENT = "improvement"
SELF_REPORTED = "self_reported"
GIT_SETUP = "labcoat:researchgym:git_setup"
NORMALIZATION_RULE = (
    "per sub-task max(0, (raw - zero) / (sota - zero)), zero = 0 unless declared "
    "(lower-is-better metrics declare their worst value); no valid result = 0; the run's "
    "normalized score is the mean over primary sub-tasks"
)
UNDECLARED_NOTE = (
    "sub-tasks undeclared: the task has no labcoat.yaml, so it is graded as one task-level "
    "score, the share of the description's `Your Method` table rows the grader filled in. "
    "Declare the sub-tasks in a sidecar for per-sub-task values and normalized scores."
)


def _files_to_read(sidecar: Sidecar | None) -> list[str]:
    files = [GRADE_OUTPUT, DESCRIPTION]
    for spec in sidecar.subtasks if sidecar else ():
        if spec.source.file and spec.source.file not in files:
            files.append(spec.source.file)
    return files


def raw_values(sidecar: Sidecar, run: GraderRun) -> dict[str, float | None]:
    """Each sub-task's value as the grader reported it (None: no valid result)."""
    documents: dict[str, Any] = {}

    def document(name: str) -> Any:
        if name not in documents:
            text = run.files.get(name)
            try:
                documents[name] = json.loads(text) if text else None
            except ValueError:
                documents[name] = None
        return documents[name]

    values: dict[str, float | None] = {}
    for spec in sidecar.subtasks:
        source = spec.source
        if source.json_path is not None:
            values[spec.id] = json_value(document(source.file or GRADE_OUTPUT), source.json_path)
        elif source.regex is not None:
            values[spec.id] = regex_value(run.stdout, source.regex)
        else:
            assert source.table is not None
            values[spec.id] = table_value(run.files.get(DESCRIPTION) or "", source.table)
    return values


def _explanation(summary: RunSummary, self_reported: bool) -> str:
    lines = []
    for r in summary.subtasks:
        best = r.spec.best_baseline
        versus = ""
        if best is not None and r.valid:
            verdict = "beaten" if r.beats_baseline else "not beaten"
            versus = f"; best baseline {best[0]} {best[1]:g}: {verdict}"
        value = "no valid result" if r.raw is None else f"{r.raw:.4g}"
        tag = " [primary]" if r.spec.primary else ""
        lines.append(f"{r.spec.id}{tag}: {value} (normalized {r.normalized:.3f}{versus})")
    head = (
        f"normalized {summary.normalized:.3f} (primary mean), "
        f"completion {summary.completion_rate:.2f}"
    )
    if self_reported:
        head += "; SELF-REPORTED: the grader read results the agent wrote"
    return "\n".join([head, *lines])


def _subtask_score(sidecar: Sidecar, run: GraderRun, self_reported: bool) -> Score:
    summary = summarize(sidecar.subtasks, raw_values(sidecar, run))
    extra: dict[str, Any] = {
        COMPLETION: summary.completion_rate,
        SELF_REPORTED: 1.0 if self_reported else 0.0,
    }
    if summary.improved is not None:
        extra[IMPROVED] = 1.0 if summary.improved else 0.0
        extra[IMPROVEMENT] = summary.improvement
    for r in summary.subtasks:
        extra[f"raw/{r.spec.id}"] = r.raw
        extra[f"normalized/{r.spec.id}"] = r.normalized
    metadata = {
        "self_reported": self_reported,
        "subtasks": [r.to_json() for r in summary.subtasks],
        "normalization": NORMALIZATION_RULE,
        COMPLETION: summary.completion_rate,
        IMPROVED: summary.improved,
        IMPROVEMENT: summary.improvement,
    }
    return research_score(
        summary.completion_rate,
        summary.normalized,
        explanation=_explanation(summary, self_reported),
        metadata=metadata,
        **extra,
    )


def _task_level_score(run: GraderRun) -> Score:
    filled, total = filled_method_rows(run.files.get(DESCRIPTION) or "")
    raw = filled / total if total else None
    explanation = (
        f"SELF-REPORTED task-level score: the grader filled {filled} of {total} `Your Method` "
        f"rows. {UNDECLARED_NOTE}"
    )
    return research_score(
        raw,
        math.nan,
        explanation=explanation,
        metadata={
            "self_reported": True,
            "subtasks": None,
            "note": UNDECLARED_NOTE,
            "your_method_rows": {"filled": filled, "tables": total},
        },
        **{COMPLETION: raw, SELF_REPORTED: 1.0},
    )


@scorer(
    metrics={
        NORMALIZED: [mean_scored(), stderr_scored()],
        RAW: [mean_scored()],
        COMPLETION: [mean_scored()],
        IMPROVED: [mean_scored()],
    }
)
def researchgym_scorer():
    """Grade in a fresh protected sandbox after the agent stops."""

    async def score(state: TaskState, target: Target) -> Score:
        info = SampleInfo.of(state.metadata)
        folder = info.folder
        sidecar = folder.sidecar
        grading = sidecar.grading if sidecar is not None else GradingSpec()
        await stop_agent_processes()
        async with agent_workspace(info.workdir) as workspace:
            run = await run_grader(
                folder,
                workspace,
                command=grading.command,
                self_reported=grading.self_reported,
                timeout_s=grading.timeout_minutes * 60,
                memory_mb=info.memory_mb,
                read_files=_files_to_read(sidecar),
            )
            try:
                history = await capture_history(workspace, info.workdir)
            except Exception as ex:  # the history is a record; losing it must not lose the score
                history = {"captured": False, "error": f"{type(ex).__name__}: {ex}"}
        if sidecar is not None:
            result = _subtask_score(sidecar, run, grading.self_reported)
        else:
            result = _task_level_score(run)
        hits = scan_messages(state.messages, folder.blocklist)
        assert result.metadata is not None
        result.metadata.update(
            grader=run.to_json(),
            blocklist={
                "rules": len(folder.blocklist.urls) + len(folder.blocklist.patterns),
                "hits": [h.to_json() for h in hits],
            },
            network={"enabled": info.network, "attempts": network_attempts()},
            idea_hint=info.idea_hint,
            workspace_git={"setup": store().get(GIT_SETUP), **history},
        )
        if run.timed_out or run.exit_code != 0:
            how = "timed out" if run.timed_out else f"exited {run.exit_code}"
            result.explanation = f"{result.explanation}\nGRADER {how}: see metadata.grader"
        if hits:
            result.explanation = (
                f"{result.explanation}\nBLOCKLIST: {len(hits)} blocked URL(s) in the transcript"
            )
        return result

    return score

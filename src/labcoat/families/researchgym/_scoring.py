"""Final scoring: the grader in a protected sandbox, then metrics, blocklist, git history.

`Score.value` holds the paper's three per-run figures: `normalized` (the primary metric
scaled so 0 scores 0 and SOTA scores 1: what `labcoat validate` checks), `completion_rate`
(= `raw`, the share of sub-tasks with every metric valid) and `improved` (1 when the
primary value beats the baseline, else 0). Beside them: `primary` (the primary metric's
value), `improvement` (normalized margin over the baseline), `self_reported` (1 when the
grader read results the agent wrote), `complete/<sub-task>` (1/0) and `raw/<metric key>`
(detail). A figure with no valid value is left out, never None. The metadata has the
details, including whether the scores are self-reported and the grader's
`integrity_flags`.

A grader that exits non-zero, times out or writes nothing gives no score: the sample is an
error (`GraderFailed`), and the grader's record (command, exit code, output) is kept in
the sample's store under `GRADER_RECORD` and in its transcript.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import store

from labcoat._errors import LabcoatError
from labcoat.families._score import NORMALIZED, RAW, mean_scored, research_score, stderr_scored
from labcoat.families.researchgym._extract import (
    filled_method_rows,
    json_value,
    regex_value,
    table_value,
)
from labcoat.families.researchgym._folder import DESCRIPTION, TaskFolder
from labcoat.families.researchgym._git import HISTORY_TIMEOUT_S, capture_history
from labcoat.families.researchgym._grading import GRADE_OUTPUT, GraderRun, run_grader
from labcoat.families.researchgym._metrics import RunSummary, out_of_bounds, summarize
from labcoat.families.researchgym._sample import SampleInfo
from labcoat.families.researchgym._sidecar import GradingSpec, Sidecar
from labcoat.grading import (
    KEPT,
    agent_workspace,
    bounded_by_scoring_time,
    keep_workspace,
    kept_flags,
    network_attempts,
    stop_agent_processes,
    within_scoring_time,
)
from labcoat.integrity import INTEGRITY_FLAGS, scan_messages

COMPLETION = "completion_rate"
PRIMARY = "primary"
IMPROVED = "improved"
IMPROVEMENT = "improvement"
SELF_REPORTED = "self_reported"
GIT_SETUP = "labcoat:researchgym:git_setup"
GRADER_RECORD = "labcoat:researchgym:grader"
NORMALIZATION_RULE = (
    "max(0, (primary - zero) / (sota - zero)) on the task's primary metric (the mean of the "
    "metrics it reads, all valid), zero = 0 unless declared; no valid primary value = 0; "
    "capped at the primary metric's max_normalized (default 2), with an integrity flag"
)
UNDECLARED_NOTE = (
    "sub-tasks undeclared: the task has no labcoat.yaml and no overlay of labcoat's matches "
    "it, so it is graded as one task-level score, the share of the description's "
    "`Your Method` table rows that hold values after grading. Declare the sub-tasks in a "
    "sidecar for per-sub-task values and normalized scores."
)


class GraderFailed(LabcoatError):
    """The grader gave no result to score: the sample is an error, never a score."""


def _files_to_read(sidecar: Sidecar | None) -> list[str]:
    files = [GRADE_OUTPUT, DESCRIPTION]
    for _, metric in sidecar.metric_keys.values() if sidecar else ():
        if metric.source.file and metric.source.file not in files:
            files.append(metric.source.file)
    return files


def _document(run: GraderRun, name: str) -> Any:
    text = run.files.get(name)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def raw_values(sidecar: Sidecar, run: GraderRun) -> dict[str, float | None]:
    """Each metric's value as the grader reported it, by metric key (None: no valid
    result)."""
    documents: dict[str, Any] = {}
    values: dict[str, float | None] = {}
    for key, (_, metric) in sidecar.metric_keys.items():
        source = metric.source
        if source.json_path is not None:
            name = source.file or GRADE_OUTPUT
            if name not in documents:
                documents[name] = _document(run, name)
            values[key] = json_value(documents[name], source.json_path)
        elif source.regex is not None:
            values[key] = regex_value(run.stdout, source.regex)
        else:
            assert source.table is not None
            values[key] = table_value(run.files.get(DESCRIPTION) or "", source.table)
    return values


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


def _reason_line(text: str) -> str:
    """The line that says why: the first exception a traceback names (a grader that runs
    other programs ends with its own exception; the first is the cause), else the last."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if _EXCEPTION.match(line)]
    line = causes[0] if causes else (lines[-1] if lines else "")
    return line[:300]


def grader_failure(
    run: GraderRun, sidecar: Sidecar | None, description: str, timeout_minutes: float
) -> str | None:
    """Why the grader's run gives nothing to score, or None when it can be scored.

    Non-zero exit, timeout, or nothing written: a labcoat grader (a `json` source without
    `file`) must write its JSON result; any grader must leave some trace (output, a
    declared result file, or an updated table).
    """
    if run.timed_out:
        return f"the grader timed out after {timeout_minutes:g} minute(s)"
    if run.exit_code != 0:
        last = _reason_line(run.stderr) or _reason_line(run.stdout)
        return f"the grader exited {run.exit_code}" + (f": {last}" if last else "")
    specs = [m for _, m in sidecar.metric_keys.values()] if sidecar else []
    if any(s.source.json_path is not None and s.source.file is None for s in specs):
        document = _document(run, GRADE_OUTPUT)
        if not isinstance(document, dict):
            return "the grader wrote no JSON result to $LABCOAT_GRADE_OUTPUT"
    declared = [s.source.file for s in specs if s.source.file]
    wrote = (
        run.stdout.strip()
        or run.stderr.strip()
        or any(run.files.get(name) is not None for name in declared)
        or (run.files.get(DESCRIPTION) or "") != description
        or run.files.get(GRADE_OUTPUT) is not None
    )
    if not wrote:
        return "the grader exited 0 but wrote nothing (no output, no result file, no table)"
    return None


def integrity_flags(run: GraderRun) -> list[str]:
    """One-line integrity findings a labcoat grader reports beside its values."""
    document = _document(run, GRADE_OUTPUT)
    flags = document.get(INTEGRITY_FLAGS) if isinstance(document, dict) else None
    if not isinstance(flags, list):
        return []
    return [" ".join(str(f).split())[:500] for f in flags if isinstance(f, str) and f.strip()]


def _value(value: float | None) -> str:
    return "no valid result" if value is None else f"{value:.4g}"


def _explanation(summary: RunSummary, self_reported: bool) -> str:
    primary = summary.primary
    verdict = {True: "beats", False: "does not beat", None: "no baseline for"}
    head = (
        f"normalized {summary.normalized:.3f} ({primary.spec.metric} "
        f"{_value(primary.value)}, SOTA {primary.spec.sota:g}); {verdict[primary.beats_baseline]} "
        f"the baseline"
        + (f" {primary.spec.baseline:g}" if primary.spec.baseline is not None else "")
        + f"; completion {summary.completion_rate:.2f}"
    )
    if self_reported:
        head += "; SELF-REPORTED: the grader read results the agent wrote"
    lines = [head]
    for r in summary.subtasks:
        state = "complete" if r.complete else "incomplete"
        tag = " [primary]" if r.primary else ""
        values = ", ".join(f"{m.spec.id} {_value(m.raw)}" for m in r.metrics)
        lines.append(f"{r.spec.id}{tag}: {state} ({values})")
    return "\n".join(lines)


def _subtask_score(sidecar: Sidecar, run: GraderRun, self_reported: bool) -> Score:
    raws = raw_values(sidecar, run)
    summary = summarize(sidecar, raws)
    primary = summary.primary
    flags = [*out_of_bounds(sidecar, raws), *filter(None, [primary.capped])]
    # no valid result is an absent key, never None: every value is a number for Inspect
    extra: dict[str, Any] = {
        COMPLETION: summary.completion_rate,
        SELF_REPORTED: 1.0 if self_reported else 0.0,
    }
    if primary.value is not None:
        extra[PRIMARY] = primary.value
    if primary.beats_baseline is not None:
        extra[IMPROVED] = 1.0 if primary.beats_baseline else 0.0
        extra[IMPROVEMENT] = primary.improvement
    for r in summary.subtasks:
        extra[f"complete/{r.spec.id}"] = 1.0 if r.complete else 0.0
    for key, value in summary.values.items():
        if value is not None:
            extra[f"raw/{key}"] = value
    metadata = {
        INTEGRITY_FLAGS: flags,
        "self_reported": self_reported,
        PRIMARY: primary.to_json(),
        "subtasks": [r.to_json() for r in summary.subtasks],
        "normalization": NORMALIZATION_RULE,
        COMPLETION: summary.completion_rate,
        IMPROVED: primary.beats_baseline,
        IMPROVEMENT: primary.improvement,
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
        f"SELF-REPORTED task-level score: {filled} of {total} `Your Method` rows hold values "
        f"after grading. {UNDECLARED_NOTE}"
    )
    return research_score(
        raw,
        math.nan,
        explanation=explanation,
        metadata={
            "self_reported": True,
            "subtasks": None,
            "note": UNDECLARED_NOTE,
            "your_method_rows": {"filled": filled, "rows": total},
        },
        **{COMPLETION: raw, SELF_REPORTED: 1.0},
    )


def score_run(folder: TaskFolder, run: GraderRun) -> Score:
    """The score of a grader's run, or GraderFailed when the run gives nothing to score."""
    sidecar = folder.sidecar
    grading = sidecar.grading if sidecar is not None else GradingSpec()
    failure = grader_failure(run, sidecar, folder.description(), grading.timeout_minutes)
    if failure is not None:
        raise GraderFailed(
            f"{folder.name}: {failure} (no score; the grader's output is kept in the "
            f"sample's store, {GRADER_RECORD})"
        )
    if sidecar is not None:
        result = _subtask_score(sidecar, run, grading.self_reported)
    else:
        result = _task_level_score(run)
    assert result.metadata is not None
    flags = [*result.metadata.get(INTEGRITY_FLAGS, []), *integrity_flags(run)]
    result.metadata[INTEGRITY_FLAGS] = flags
    if flags:
        result.explanation = "\n".join(
            [result.explanation or "", *(f"INTEGRITY: {flag}" for flag in flags)]
        )
    return result


def _add_flags(result: Score, flags: list[str]) -> None:
    if not flags:
        return
    assert result.metadata is not None
    result.metadata[INTEGRITY_FLAGS] = [*result.metadata.get(INTEGRITY_FLAGS, []), *flags]
    result.explanation = "\n".join([result.explanation or "", *(f"INTEGRITY: {f}" for f in flags)])


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

    @bounded_by_scoring_time
    async def score(state: TaskState, target: Target) -> Score:
        info = SampleInfo.of(state.metadata)
        folder = info.folder
        sidecar = folder.sidecar
        grading = sidecar.grading if sidecar is not None else GradingSpec()
        await stop_agent_processes()
        # the grader's input, kept for `labcoat regrade` (with the git setup it compares to)
        kept = await keep_workspace(state, info.workdir, store_keys=(GIT_SETUP,))
        async with agent_workspace(info.workdir) as workspace:
            run = await run_grader(
                folder,
                workspace,
                command=grading.command,
                self_reported=grading.self_reported,
                timeout_s=within_scoring_time(grading.timeout_minutes * 60),
                memory_mb=info.memory_mb,
                read_files=_files_to_read(sidecar),
                gpus=sidecar.resources.gpus if sidecar else 0,
                network=grading.network,
            )
            record = run.to_json()
            store().set(GRADER_RECORD, record)
            transcript().info(record, source="researchgym grader")
            try:
                history = await capture_history(
                    workspace, info.workdir, timeout=within_scoring_time(HISTORY_TIMEOUT_S)
                )
            except Exception as ex:  # the history is a record; losing it must not lose the score
                history = {"captured": False, "error": f"{type(ex).__name__}: {ex}"}
        result = score_run(folder, run)
        hits = scan_messages(state.messages, folder.blocklist)
        assert result.metadata is not None
        result.metadata.update(
            grader=record,
            blocklist={
                "rules": len(folder.blocklist.urls) + len(folder.blocklist.patterns),
                "hits": [h.to_json() for h in hits],
            },
            network={"enabled": info.network, "attempts": network_attempts()},
            idea_hint=info.idea_hint,
            workspace_git={"setup": store().get(GIT_SETUP), **history},
            sidecar=folder.sidecar_origin,
        )
        result.metadata[KEPT] = kept
        _add_flags(result, kept_flags(kept))
        if hits:
            result.explanation = (
                f"{result.explanation}\nBLOCKLIST: {len(hits)} blocked URL(s) in the transcript"
            )
        return result

    return score

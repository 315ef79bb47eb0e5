"""`labcoat inspect`: read every run of a set of logs, report suspected cheating with
evidence, and write the findings into the logs.

Each run (sample and epoch) is read for its transcript (the agent's tool calls and what
they returned), its workspace history as the transcript records it (files written,
commands run), and its records (the sandbox's proxy log and disk-quota stops, the
grader's integrity flags and blocklist hits). The rule-based detectors run first; with a
model, a reviewer reads each run with an agent's actions as well.

Where the findings go, so that `inspect view` shows them and they survive: a run with a
score gets a score edit (Inspect's own `edit_score`, with provenance `labcoat inspect`)
whose metadata carries `integrity_findings` (every finding with its evidence) and adds
one `inspect: ...` line per flagging finding to `integrity_flags`; a run without a
score gets the same keys in its sample metadata. The log's metadata records the
inspection (`labcoat_inspect`) and the tag `integrity-flagged` marks a log with flagged
runs. Inspecting again replaces what the last inspection wrote and keeps the grader's
own flags; a log whose findings did not change is not rewritten.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.log import (
    EvalLog,
    EvalSample,
    MetadataEdit,
    ProvenanceData,
    TagsEdit,
    edit_eval_log,
    edit_score,
    list_eval_logs,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.scorer import ScoreEdit

from labcoat._unavailable import reason_of
from labcoat._util.sync import run_sync
from labcoat._version import __version__
from labcoat.integrity._detectors import detect
from labcoat.integrity._findings import FINDINGS_KEY, INSPECT_PREFIX, Finding, RunView
from labcoat.integrity._flags import INSPECT_KEY, INTEGRITY_FLAGS, flags_of

AUTHOR = "labcoat inspect"
FLAGGED_TAG = "integrity-flagged"


@dataclass
class RunFindings:
    """What the inspector found about one run."""

    log: str
    family: str
    task_id: str
    sample_id: str
    epoch: int
    agent: str
    findings: list[Finding] = field(default_factory=list)
    grader_flags: list[str] = field(default_factory=list)
    cannot_run_here: str | None = None
    """Why the sample could not start on its machine (no run: nothing ran to inspect)."""

    @property
    def flags(self) -> list[str]:
        """The run's integrity flags after inspection: the grader's and the inspector's."""
        return self.grader_flags + [f.line for f in self.findings if f.flag]

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    def to_json(self) -> dict[str, Any]:
        return {
            "log": self.log,
            "family": self.family,
            "task": self.task_id,
            "sample": self.sample_id,
            "epoch": self.epoch,
            "agent": self.agent,
            "flagged": self.flagged,
            "flags": self.flags,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass
class Inspection:
    runs: list[RunFindings] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    model: str | None = None

    @property
    def flagged(self) -> list[RunFindings]:
        return [r for r in self.runs if r.flagged]

    def to_json(self) -> dict[str, Any]:
        return {
            "logs": self.logs,
            "written": self.written,
            "model": self.model,
            "runs": len(self.runs),
            "flagged": len(self.flagged),
            "findings": [r.to_json() for r in self.runs if r.findings or r.flagged],
        }


def log_locations(sources: Iterable[str | Path]) -> list[str]:
    """Every .eval/.json log at the sources (folders, searched recursively, or files)."""
    found: list[str] = []
    for source in sources:
        text = str(source)
        if text.endswith((".eval", ".json")) and not text.endswith(("logs.json", "eval-set.json")):
            found.append(text)
            continue
        found += [info.name for info in list_eval_logs(text, recursive=True)]
    return sorted(dict.fromkeys(found))


def _family(log: EvalLog) -> str:
    return str((log.eval.metadata or {}).get("labcoat_family") or log.eval.task)


async def _findings_of(
    sample: EvalSample, family: str, model: Any
) -> tuple[RunView, list[Finding]]:
    view = RunView.of(sample, family)
    findings = detect(view)
    if model is not None:
        from labcoat.integrity._llm_review import review

        findings += await review(view, findings, model)
    return view, findings


def _labcoat_score(sample: EvalSample) -> tuple[str, Any] | None:
    for name, score in (sample.scores or {}).items():
        if isinstance(score.value, dict):
            return name, score
    return None


def _merged(metadata: dict[str, Any], findings: list[Finding]) -> dict[str, Any] | None:
    """`metadata` with this inspection's flags and findings; None when nothing changes."""
    old = flags_of(metadata)
    kept = [f for f in old if not f.startswith(INSPECT_PREFIX)]
    flags = kept + [f.line for f in findings if f.flag]
    record = [f.to_json() for f in findings]
    if flags == old and metadata.get(FINDINGS_KEY, []) == record:
        return None
    merged = dict(metadata)
    if flags or INTEGRITY_FLAGS in merged:
        merged[INTEGRITY_FLAGS] = flags
    if record or FINDINGS_KEY in merged:
        merged[FINDINGS_KEY] = record
    return merged


def _write_findings(log: EvalLog, sample: EvalSample, findings: list[Finding]) -> bool:
    """Record `findings` in the log (not yet saved); whether anything changed."""
    scored = _labcoat_score(sample)
    if scored is not None:
        name, score = scored
        merged = _merged(dict(score.metadata or {}), findings)
        if merged is None:
            return False
        flagged = sum(f.flag for f in findings)
        edit = ScoreEdit(
            metadata=merged,
            provenance=ProvenanceData(
                author=AUTHOR,
                reason=f"integrity inspection: {len(findings)} finding(s), {flagged} flagging",
                metadata={"labcoat": __version__},
            ),
        )
        edit_score(log, sample.id, name, edit, recompute_metrics=False, epoch=sample.epoch)
        return True
    merged = _merged(dict(sample.metadata or {}), findings)
    if merged is None:
        return False
    sample.metadata = merged
    return True


async def inspect_log(
    location: str, *, model: Any = None, write: bool = True
) -> tuple[list[RunFindings], bool]:
    """Inspect one log; (each run's findings, whether the log was rewritten).

    Inspect's log I/O runs in a worker thread: called from inside a running event loop it
    would switch on nest_asyncio for the whole process (and change asyncio.run for good).
    """
    log = await anyio.to_thread.run_sync(read_eval_log, location)
    family = _family(log)
    agent = str(log.eval.task_args.get("agent") or (log.eval.metadata or {}).get("agent") or "")
    runs, changed = [], False
    for sample in log.samples or []:
        view, findings = await _findings_of(sample, family, model)
        grader = [f for f in flags_of(view.score_metadata) + flags_of(view.sample_metadata)]
        run = RunFindings(
            log=location,
            family=family,
            task_id=view.task_id,
            sample_id=view.sample_id,
            epoch=view.epoch,
            agent=agent,
            findings=findings,
            grader_flags=[f for f in dict.fromkeys(grader) if not f.startswith(INSPECT_PREFIX)],
            cannot_run_here=reason_of(sample.error.message) if sample.error else None,
        )
        runs.append(run)
        if write:
            changed |= _write_findings(log, sample, findings)
    if write and (changed or INSPECT_KEY not in (log.metadata or {})):
        flagged = sum(r.flagged for r in runs)
        record = {
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "labcoat": __version__,
            "model": str(model) if model is not None else None,
            "runs": len(runs),
            "flagged": flagged,
        }
        provenance = ProvenanceData(author=AUTHOR, reason="integrity inspection")
        tags = TagsEdit(tags_add=[FLAGGED_TAG]) if flagged else TagsEdit(tags_remove=[FLAGGED_TAG])
        log = edit_eval_log(
            log, [MetadataEdit(metadata_set={INSPECT_KEY: record}), tags], provenance
        )
        await anyio.to_thread.run_sync(write_eval_log, log, location)
        changed = True
    return runs, changed


def inspect_logs(
    sources: Iterable[str | Path], *, model: str | Any | None = None, write: bool = True
) -> Inspection:
    """Inspect every log at `sources`; write the findings into them unless `write` is False.

    `model`: an Inspect model (name or `Model`) for the reviewer pass, or None for the
    rule-based detectors only.
    """
    return run_sync(_inspect_all, log_locations(sources), model, write)


async def _inspect_all(locations: list[str], model: str | Any | None, write: bool) -> Inspection:
    resolved = None
    if model is not None:
        from inspect_ai.model import get_model

        resolved = get_model(model) if isinstance(model, str) else model
    inspection = Inspection(model=str(resolved) if resolved is not None else None)
    for location in locations:
        runs, changed = await inspect_log(location, model=resolved, write=write)
        inspection.logs.append(location)
        inspection.runs += runs
        if changed:
            inspection.written.append(location)
    return inspection

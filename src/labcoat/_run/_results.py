"""Per-task figures read back from the .eval logs (the logs are the record).

Means follow the one rule every labcoat table uses (`labcoat.families._score`): an
errored run counts as 0 normalized, and the errors column says how many there were.
Flagged runs (integrity flags from a grader or from `labcoat inspect`) keep their score
and are listed.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from inspect_ai.log import EvalLog, read_eval_log

from labcoat._run._budget import is_not_started
from labcoat.families._score import ERROR_RULE, NORMALIZED, RAW, WEIGHT, mean_over_runs
from labcoat.integrity import run_flags


@dataclass
class TaskResult:
    task_id: str
    family: str
    agent: str
    raw: list[float] = field(default_factory=list)
    normalized: list[float | None] = field(default_factory=list)
    """Each run's normalized score; None for an errored run (it counts as 0 in the mean)."""
    weights: list[float] = field(default_factory=list)
    """Weight of each normalized value (ResearchCodeBench weighs snippets by lines)."""
    errors: int = 0
    runs: int = 0
    weak_tests: list[str] = field(default_factory=list)
    """Samples whose tests passed with nothing done (a noop run): the task can't tell."""
    error_reasons: list[str] = field(default_factory=list)
    """The distinct one-line reasons of the errored samples, in order of first sight."""
    problem: str | None = None
    """Why the task could not be loaded at all (it did not run)."""
    variant: str = ""
    """The family's variant the run used (PaperBench's `Code-Dev`), from the task's
    `labcoat_variant` metadata; runs of different variants are never pooled."""
    components: dict[str, list[float]] = field(default_factory=dict)
    """The score's other figures over the scored samples, e.g. ResearchGym's
    `completion_rate`, `improved`, `complete/<sub-task>` (None values left out)."""
    primary: set[str] = field(default_factory=set)
    """Sub-tasks the scores' metadata marks primary (ResearchGym)."""

    def component_mean(self, key: str) -> float | None:
        finite = [v for v in self.components.get(key, []) if math.isfinite(v)]
        return statistics.fmean(finite) if finite else None

    @property
    def subtasks(self) -> list[str]:
        """Sub-task ids, in the order the scores give them."""
        return [k.split("/", 1)[1] for k in self.components if k.startswith("complete/")]

    environment_notes: list[str] = field(default_factory=list)
    """Changes made to install the task's environment here (scores' `environment_notes`)."""
    manual: int = 0
    """Runs whose task returned no score: a person must score them (left out of means)."""
    flagged: dict[str, list[str]] = field(default_factory=dict)
    """Runs with integrity flags: sample (and epoch) -> the flags."""
    not_started: int = 0
    """Samples the run's budget did not let start: not runs, not errors, not in a mean."""

    @property
    def unavailable(self) -> str | None:
        """Why the task could not start here (its environment), when no run got further."""
        if self.runs and self.errors == self.runs and self.error_reasons:
            reasons = [r for r in self.error_reasons if r.startswith(UNAVAILABLE)]
            if len(reasons) == len(self.error_reasons):
                return reasons[0].removeprefix(UNAVAILABLE).strip()
        return None

    @property
    def raw_mean(self) -> float | None:
        finite = [v for v in self.raw if math.isfinite(v)]
        return statistics.fmean(finite) if finite else None

    @property
    def normalized_mean(self) -> float | None:
        """The mean over all runs, errored ones as 0 (None when the task did not start
        here, or has no normalized scale)."""
        if self.unavailable:
            return None
        return mean_over_runs(self.normalized, self.weights)

    @property
    def normalized_se(self) -> float | None:
        counted = [0.0 if v is None else v for v in self.normalized]
        finite = [v for v in counted if math.isfinite(v)]
        if len(finite) < 2 or self.unavailable:
            return None
        return statistics.stdev(finite) / math.sqrt(len(finite))

    def to_json(self) -> dict:
        return {
            "task": self.task_id,
            "family": self.family,
            "agent": self.agent,
            "runs": self.runs,
            "errors": self.errors,
            "raw": self.raw_mean,
            "normalized": self.normalized_mean,
            "normalized_se": self.normalized_se,
            "error_reasons": self.error_reasons,
            "unavailable": self.unavailable,
            "problem": self.problem,
            "variant": self.variant or None,
            **(
                {"components": {k: self.component_mean(k) for k in self.components}}
                if self.components
                else {}
            ),
            **({"primary_subtasks": sorted(self.primary)} if self.primary else {}),
            "weak_tests": self.weak_tests,
            "environment_notes": self.environment_notes,
            "needs_manual_score": self.manual,
            "flagged": self.flagged,
            "not_started": self.not_started,
            "error_rule": ERROR_RULE,
        }


UNAVAILABLE = "environment unavailable:"


_REPR = re.compile(r"^[A-Za-z_][\w.]*\((['\"])(.*)\1\)$", re.DOTALL)


def error_reason(message: str | None) -> str:
    """One line that says why a sample errored (its error's own line, not a traceback)."""
    if not message:
        return "no score"
    text = message.strip()
    wrapped = _REPR.match(text)  # Inspect records some errors as `Name("message")`
    if wrapped:
        text = wrapped.group(2).replace(f"\\{wrapped.group(1)}", wrapped.group(1)).strip()
    start = text.find(UNAVAILABLE)
    if start >= 0:
        line = text[start:].splitlines()[0]
        quote = text[start - 1] if start and text[start - 1] in "'\"" else ""
        if quote and text[:start].endswith("(" + quote) and line.endswith(quote + ")"):
            line = line[: -len(quote + ")")]  # Inspect records the error's repr
        return line
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "error"


def _add_components(result: TaskResult, value: dict, metadata: dict) -> None:
    for key, figure in value.items():
        if key in (RAW, NORMALIZED, WEIGHT):
            continue
        listed = result.components.setdefault(key, [])
        if isinstance(figure, int | float) and not isinstance(figure, bool):
            listed.append(float(figure))
    subtasks = metadata.get("subtasks")
    if isinstance(subtasks, list):
        result.primary.update(
            str(s["id"]) for s in subtasks if isinstance(s, dict) and s.get("primary")
        )


def _error_weight(sample: object, family: str) -> float:
    """An errored sample's weight in its task's mean: what its metadata says, else 1."""
    meta = getattr(sample, "metadata", None) or {}
    value = (meta.get(family) or {}).get("weight") if isinstance(meta.get(family), dict) else None
    return float(value) if isinstance(value, int | float) and value > 0 else 1.0


def only_not_started(log: EvalLog) -> bool:
    """A log whose only errors are samples the run's budget did not let start."""
    if log.status != "error":
        return False
    full = read_eval_log(log.location) if log.samples is None else log
    errors = [s for s in full.samples or [] if s.error is not None]
    return bool(errors) and all(is_not_started(s.error.message) for s in errors)


def collect_results(logs: list[EvalLog]) -> list[TaskResult]:
    """One TaskResult per (task id, agent); errored samples are counted, not dropped."""
    results: dict[tuple[str, str, str], TaskResult] = {}
    for header in logs:
        log = read_eval_log(header.location) if header.samples is None else header
        agent = str(log.eval.task_args.get("agent", "?"))
        family = str((log.eval.metadata or {}).get("labcoat_family", log.eval.task))
        variant = str((log.eval.metadata or {}).get("labcoat_variant") or "")
        for sample in log.samples or []:
            task_id = str((sample.metadata or {}).get("task_id", sample.id))
            key = (task_id, agent, variant)
            result = results.setdefault(key, TaskResult(task_id, family, agent, variant=variant))
            if sample.error is not None and is_not_started(sample.error.message):
                result.not_started += 1  # it ran nothing: listed, never scored or an error
                continue
            result.runs += 1
            flags = run_flags(sample)
            if flags:
                result.flagged[f"{sample.id}#{sample.epoch}"] = flags
            score = next(iter((sample.scores or {}).values()), None)
            if sample.error is not None or score is None or not isinstance(score.value, dict):
                result.errors += 1
                result.normalized.append(None)
                result.weights.append(_error_weight(sample, family))
                reason = error_reason(sample.error.message if sample.error else None)
                if reason not in result.error_reasons:
                    result.error_reasons.append(reason)
                continue
            if (score.metadata or {}).get("weak_test"):
                result.weak_tests.append(str(sample.id))
            _add_components(result, score.value, score.metadata or {})
            for note in (score.metadata or {}).get("environment_notes") or []:
                if note not in result.environment_notes:
                    result.environment_notes.append(str(note))
            if (score.metadata or {}).get("manual_scoring"):
                result.manual += 1
            raw, normalized = score.value.get(RAW), score.value.get(NORMALIZED)
            if isinstance(raw, int | float):
                result.raw.append(float(raw))
            # a scored run without a normalized value (no scale) is listed, not counted
            known = isinstance(normalized, int | float)
            result.normalized.append(float(normalized) if known else math.nan)
            result.weights.append(float(score.value.get(WEIGHT, 1.0)))
    grouped: dict[str, list[TaskResult]] = defaultdict(list)
    for result in results.values():
        grouped[result.task_id].append(result)
    return [
        r
        for task_id in sorted(grouped)
        for r in sorted(grouped[task_id], key=lambda r: (r.agent, r.variant))
    ]

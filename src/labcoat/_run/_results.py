"""Per-task figures read back from the .eval logs (the logs are the record)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from inspect_ai.log import EvalLog, read_eval_log

from labcoat.families._score import NORMALIZED, RAW, WEIGHT


@dataclass
class TaskResult:
    task_id: str
    family: str
    agent: str
    raw: list[float] = field(default_factory=list)
    normalized: list[float] = field(default_factory=list)
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
    manual: int = 0
    """Runs whose task returned no score: a person must score them (left out of means)."""
    integrity_flags: list[str] = field(default_factory=list)
    """The first integrity flag of each flagged run (score metadata `integrity_flags`):
    scoring the solution broke (the run counts with the worst valid score) or the agent
    changed what the grader uses."""

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
        pairs = [
            (v, w) for v, w in zip(self.normalized, self.weights, strict=True) if math.isfinite(v)
        ]
        total = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / total if total > 0 else None

    @property
    def normalized_se(self) -> float | None:
        finite = [v for v in self.normalized if math.isfinite(v)]
        if len(finite) < 2:
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
            "needs_manual_score": self.manual,
            "integrity_flags": self.integrity_flags,
        }


UNAVAILABLE = "environment unavailable:"


def error_reason(message: str | None) -> str:
    """One line that says why a sample errored (its error's own line, not a traceback)."""
    if not message:
        return "no score"
    text = message.strip()
    start = text.find(UNAVAILABLE)
    if start >= 0:
        line = text[start:].splitlines()[0]
        # an exception's repr, `SomeError("environment unavailable: ...")`: its own text
        quote = text[start - 1] if start > 0 else ""
        if quote in "\"'" and line.endswith(quote + ")"):
            line = line[:-2]
        return line
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "error"


def collect_results(logs: list[EvalLog]) -> list[TaskResult]:
    """One TaskResult per (task id, agent); errored samples are counted, not dropped."""
    results: dict[tuple[str, str], TaskResult] = {}
    for header in logs:
        log = read_eval_log(header.location) if header.samples is None else header
        agent = str(log.eval.task_args.get("agent", "?"))
        family = str((log.eval.metadata or {}).get("labcoat_family", log.eval.task))
        for sample in log.samples or []:
            task_id = str((sample.metadata or {}).get("task_id", sample.id))
            key = (task_id, agent)
            result = results.setdefault(key, TaskResult(task_id, family, agent))
            result.runs += 1
            score = next(iter((sample.scores or {}).values()), None)
            if sample.error is not None or score is None or not isinstance(score.value, dict):
                result.errors += 1
                reason = error_reason(sample.error.message if sample.error else None)
                if reason not in result.error_reasons:
                    result.error_reasons.append(reason)
                continue
            if (score.metadata or {}).get("weak_test"):
                result.weak_tests.append(str(sample.id))
            if (score.metadata or {}).get("manual_scoring"):
                result.manual += 1
            flags = (score.metadata or {}).get("integrity_flags") or []
            if flags:
                result.integrity_flags.append(str(flags[0]))
            raw, normalized = score.value.get(RAW), score.value.get(NORMALIZED)
            if isinstance(raw, int | float):
                result.raw.append(float(raw))
            if isinstance(normalized, int | float):
                result.normalized.append(float(normalized))
                result.weights.append(float(score.value.get(WEIGHT, 1.0)))
    grouped: dict[str, list[TaskResult]] = defaultdict(list)
    for result in results.values():
        grouped[result.task_id].append(result)
    return [
        r for task_id in sorted(grouped) for r in sorted(grouped[task_id], key=lambda r: r.agent)
    ]

"""Per-task figures read back from the .eval logs (the logs are the record).

Means follow the one rule every labcoat table uses (`labcoat.families._score`): an
errored run counts as 0 normalized, and the errors column says how many there were.
Flagged runs (integrity flags from a grader or from `labcoat inspect`) keep their score
and are listed. A run is what the report counts: a task's samples in one epoch of one
log (one sample, except a ResearchCodeBench paper: its snippets). Samples that could not
run on this machine (`labcoat._unavailable`) or that the budget did not let start are
no runs: counted apart, in no mean.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from inspect_ai.log import EvalLog, read_eval_log

from labcoat import _unavailable
from labcoat._run._budget import is_not_started
from labcoat.families import family_spec, is_family
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
    """Runs with no valid score (every sample of the run errored)."""
    runs: int = 0
    """Runs of the task: its samples in one epoch of one log (the report's runs)."""
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
    model: str = ""
    """The eval's model (`none/none` for the agents that call none)."""
    samples: int = 0
    """Samples that ran (more than `runs` where a run holds several: snippets)."""
    sample_errors: int = 0
    """Samples that ran and errored (a partly errored run's count as failed)."""
    partial: int = 0
    """Runs some but not all of whose samples errored."""
    cannot_run_here: int = 0
    """Runs that could not start on this machine (`labcoat._unavailable`): no runs."""
    cannot_run_reasons: list[str] = field(default_factory=list)
    """Why, one line each (the prefix left out), in order of first sight."""
    _run_samples: dict[tuple[str, int], list[str]] = field(default_factory=dict, repr=False)
    """Each run's samples' outcomes (`ok`, `error`, `unavailable`), to count runs."""
    _value_runs: list[tuple[str, int]] = field(default_factory=list, repr=False)
    """The run of each entry of `normalized` (a run's mean is one value of the SE)."""

    @property
    def unavailable(self) -> str | None:
        """Why the task cannot run here, when none of its runs could."""
        if self.cannot_run_here and not self.runs and self.cannot_run_reasons:
            return self.cannot_run_reasons[0]
        return None

    @property
    def sample_unit(self) -> str:
        """What this family's samples are called in the tables (`snippets`)."""
        return family_spec(self.family).sample_unit if is_family(self.family) else "samples"

    def _add(self, run: tuple[str, int], outcome: str) -> None:
        self._run_samples.setdefault(run, []).append(outcome)

    def _count_runs(self) -> None:
        """runs, errors, partial and cannot_run_here from the samples' outcomes."""
        self.runs = self.errors = self.partial = self.cannot_run_here = 0
        for outcomes in self._run_samples.values():
            ran = [o for o in outcomes if o != UNAVAILABLE_OUTCOME]
            if not ran:
                self.cannot_run_here += 1
                continue
            self.runs += 1
            failed = ran.count("error")
            self.errors += failed == len(ran)
            self.partial += 0 < failed < len(ran)

    @property
    def raw_mean(self) -> float | None:
        finite = [v for v in self.raw if math.isfinite(v)]
        return statistics.fmean(finite) if finite else None

    @property
    def normalized_mean(self) -> float | None:
        """The mean over all runs, errored ones as 0 (None when the task did not start
        here, or has no normalized scale)."""
        return mean_over_runs(self.normalized, self.weights)

    def run_means(self) -> list[float]:
        """Each run's normalized score (a paper's: its snippets' weighted mean), errors
        as 0; runs without a normalized scale left out."""
        if len(self._value_runs) != len(self.normalized):  # made by hand: one per value
            keys: list[object] = list(range(len(self.normalized)))
        else:
            keys = list(self._value_runs)
        by_run: dict[object, tuple[list[float | None], list[float]]] = {}
        for key, value, weight in zip(keys, self.normalized, self.weights, strict=False):
            values, weights = by_run.setdefault(key, ([], []))
            values.append(value)
            weights.append(weight)
        means = [mean_over_runs(v, w) for v, w in by_run.values()]
        return [m for m in means if m is not None and math.isfinite(m)]

    @property
    def normalized_se(self) -> float | None:
        """The standard error over runs (a run, not a snippet, is one draw)."""
        finite = self.run_means()
        if len(finite) < 2:
            return None
        return statistics.stdev(finite) / math.sqrt(len(finite))

    def to_json(self) -> dict:
        return {
            "task": self.task_id,
            "family": self.family,
            "model": self.model or None,
            "agent": self.agent,
            "runs": self.runs,
            "errors": self.errors,
            "partial": self.partial,
            "samples": self.samples,
            "sample_errors": self.sample_errors,
            "sample_unit": self.sample_unit,
            "cannot_run_here": self.cannot_run_here,
            "cannot_run_reasons": self.cannot_run_reasons,
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


UNAVAILABLE = _unavailable.PREFIX
UNAVAILABLE_OUTCOME = "unavailable"


def error_reason(message: str | None) -> str:
    """One line that says why a sample errored (its error's own line, not a traceback)."""
    if not message:
        return "no score"
    reason = _unavailable.reason_of(message)
    if reason is not None:
        return f"{UNAVAILABLE} {reason}"
    text = _unavailable.unwrapped(message)
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


def run_exit_code(success: bool, results: list[TaskResult]) -> int:
    """`eval`'s exit code: 0 when every run that started finished (tasks that cannot run
    here are listed, not failed), 1 when one failed, `EXIT_NOTHING_RAN` when no task
    could run on this machine at all."""
    if not success:
        return 1
    nothing_ran = not any(r.runs for r in results) and any(r.cannot_run_here for r in results)
    return _unavailable.EXIT_NOTHING_RAN if nothing_ran else 0


def only_not_run(log: EvalLog) -> bool:
    """A log whose only errors are samples that ran nothing: those the run's budget did
    not let start, and those that cannot run on this machine. They are no failures of the
    run (the tables list them)."""
    if log.status != "error":
        return False
    full = read_eval_log(log.location) if log.samples is None else log
    messages = [s.error.message for s in full.samples or [] if s.error is not None]
    return bool(messages) and all(
        is_not_started(message) or _unavailable.reason_of(message) is not None
        for message in messages
    )


def collect_results(logs: list[EvalLog]) -> list[TaskResult]:
    """One TaskResult per (task id, agent); errored samples are counted, not dropped."""
    results: dict[tuple[str, str, str, str], TaskResult] = {}
    for header in logs:
        log = read_eval_log(header.location) if header.samples is None else header
        agent = str(log.eval.task_args.get("agent", "?"))
        family = str((log.eval.metadata or {}).get("labcoat_family", log.eval.task))
        variant = str((log.eval.metadata or {}).get("labcoat_variant") or "")
        model = str(log.eval.model or "")
        for sample in log.samples or []:
            task_id = str((sample.metadata or {}).get("task_id", sample.id))
            key = (task_id, agent, variant, model)
            result = results.get(key)
            if result is None:
                result = results[key] = TaskResult(
                    task_id, family, agent, variant=variant, model=model
                )
            message = sample.error.message if sample.error is not None else None
            if message is not None and is_not_started(message):
                result.not_started += 1  # it ran nothing: listed, never scored or an error
                continue
            run = (log.location or log.eval.eval_id, int(sample.epoch))
            cannot_run = _unavailable.reason_of(message)
            if cannot_run is not None:  # not a run of the task: counted apart, no score
                result._add(run, UNAVAILABLE_OUTCOME)
                if cannot_run not in result.cannot_run_reasons:
                    result.cannot_run_reasons.append(cannot_run)
                continue
            result.samples += 1
            flags = run_flags(sample)
            if flags:
                result.flagged[f"{sample.id}#{sample.epoch}"] = flags
            score = next(iter((sample.scores or {}).values()), None)
            if sample.error is not None or score is None or not isinstance(score.value, dict):
                result._add(run, "error")
                result.sample_errors += 1
                result.normalized.append(None)
                result.weights.append(_error_weight(sample, family))
                result._value_runs.append(run)
                reason = error_reason(sample.error.message if sample.error else None)
                if reason not in result.error_reasons:
                    result.error_reasons.append(reason)
                continue
            result._add(run, "ok")
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
            result.normalized.append(
                float(normalized) if isinstance(normalized, int | float) else math.nan
            )
            result.weights.append(float(score.value.get(WEIGHT, 1.0)))
            result._value_runs.append(run)
    grouped: dict[str, list[TaskResult]] = defaultdict(list)
    for result in results.values():
        result._count_runs()
        grouped[result.task_id].append(result)
    return [
        r
        for task_id in sorted(grouped)
        for r in sorted(grouped[task_id], key=lambda r: (r.agent, r.variant, r.model))
    ]

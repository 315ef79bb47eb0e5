"""`labcoat validate`: the oracle must reach ~1, the noop must stay ~0, on every task."""

from __future__ import annotations

from dataclasses import dataclass

from labcoat._run._budget import NOT_STARTED
from labcoat._run._results import TaskResult
from labcoat._unavailable import LABEL, label, reason_of
from labcoat.families import TaskEntry

NO_ORACLE = "no oracle: checks noop only"


@dataclass
class Verdict:
    entry: TaskEntry
    oracle: TaskResult | None
    noop: TaskResult | None
    passed: bool
    problems: list[str]
    unavailable: str | None = None
    """Why the task cannot run on this machine (not a failure of the task itself)."""
    manual: bool = False
    """The task returns no score (a person grades it): not validated, not failed."""

    @property
    def validated(self) -> bool:
        """Whether the task was checked here (it ran, and returns a score)."""
        return self.unavailable is None and not self.manual and not self.entry.problem

    @property
    def note(self) -> str | None:
        return None if self.entry.has_oracle else NO_ORACLE

    def to_json(self) -> dict:
        t = self.entry.thresholds
        return {
            "task": self.entry.id,
            "family": self.entry.family,
            "passed": self.passed,
            "unavailable": self.unavailable,
            "needs_manual_score": self.manual,
            "oracle": self.oracle.to_json() if self.oracle else None,
            "noop": self.noop.to_json() if self.noop else None,
            "thresholds": {"oracle_min": t.oracle_min, "noop_max": t.noop_max, "reason": t.reason},
            "problems": self.problems,
            "note": self.note,
            "weak_tests": self.noop.weak_tests if self.noop else [],
            "environment": self.environment,
            "environment_notes": self.environment_notes,
        }

    @property
    def environment_notes(self) -> list[str]:
        notes: list[str] = []
        for result in (self.oracle, self.noop):
            for note in result.environment_notes if result else []:
                if note not in notes:
                    notes.append(note)
        return notes

    @property
    def environment(self) -> str:
        """`cannot run here`, `built` or `built, N note(s)` (changes made to install here)."""
        if self.unavailable:
            return LABEL
        notes = self.environment_notes
        return "built" + (f", {len(notes)} note(s)" if notes else "")


def _check(result: TaskResult | None, agent: str) -> tuple[float | None, list[str]]:
    if result is None:
        return None, [f"{agent}: no run"]
    problems = []
    if result.not_started:  # the run's budget ran out first: the task is not validated
        problems.append(f"{agent}: {result.not_started} sample(s) {NOT_STARTED}")
    if result.sample_errors:  # one errored snippet of a paper is a problem too
        reasons = "; ".join(result.error_reasons[:2])
        problems.append(
            f"{agent}: {result.sample_errors} of {result.samples} {result.sample_unit} "
            f"errored ({reasons})"
        )
    if result.cannot_run_here and result.runs:  # some runs here, others not: not validated
        problems.append(
            f"{agent}: {result.cannot_run_here} run(s) {label(result.cannot_run_reasons[0])}"
        )
    value = result.normalized_mean
    if value is None and agent == "noop" and result.raw_mean is not None:
        value = result.raw_mean  # a task without normalization: nothing done must read 0
    if value is None:
        problems.append(f"{agent}: no normalized score")
    if result.flagged:  # an oracle or noop run is honest by construction: a false flag
        sample, flags = next(iter(result.flagged.items()))
        problems.append(f"{agent}: {len(result.flagged)} run(s) flagged ({sample}: {flags[0]})")
    return value, problems


def judge(entries: list[TaskEntry], results: list[TaskResult]) -> list[Verdict]:
    by_key = {(r.task_id, r.agent): r for r in results}
    verdicts = []
    for entry in entries:
        if entry.problem:
            elsewhere = reason_of(entry.problem)  # not listed for want of a secret, an env
            verdicts.append(
                Verdict(entry, None, None, True, [], elsewhere)
                if elsewhere
                else Verdict(entry, None, None, False, [f"cannot be loaded: {entry.problem}"])
            )
            continue
        oracle, noop = by_key.get((entry.id, "oracle")), by_key.get((entry.id, "noop"))
        unavailable = next((r.unavailable for r in (oracle, noop) if r and r.unavailable), None)
        if unavailable is not None:
            verdicts.append(Verdict(entry, oracle, noop, True, [], unavailable))
            continue
        if oracle is not None and oracle.samples and oracle.manual == oracle.samples:
            verdicts.append(Verdict(entry, oracle, noop, True, [], manual=True))
            continue
        problems: list[str] = []
        oracle_value = None
        if entry.has_oracle:  # a task without a reference solution: the noop alone
            oracle_value, problems = _check(oracle, "oracle")
        noop_value, noop_problems = _check(noop, "noop")
        problems += noop_problems
        t = entry.thresholds
        if oracle_value is not None and oracle_value < t.oracle_min:
            problems.append(f"oracle {oracle_value:.3f} < {t.oracle_min}")
        weak_floor = not t.weak_tests_fail and noop is not None and bool(noop.weak_tests)
        if noop_value is not None and noop_value > t.noop_max and not weak_floor:
            problems.append(f"noop {noop_value:.3f} > {t.noop_max}")
        if noop is not None and noop.weak_tests and t.weak_tests_fail:
            problems.append(
                "weak test(s), passing with nothing done: " + ", ".join(noop.weak_tests)
            )
        verdicts.append(Verdict(entry, oracle, noop, not problems, problems))
    return verdicts

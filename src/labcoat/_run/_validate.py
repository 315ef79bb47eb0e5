"""`labcoat validate`: the oracle must reach ~1, the noop must stay ~0, on every task."""

from __future__ import annotations

from dataclasses import dataclass

from labcoat._run._results import TaskResult
from labcoat.families import TaskEntry


@dataclass
class Verdict:
    entry: TaskEntry
    oracle: TaskResult | None
    noop: TaskResult | None
    passed: bool
    problems: list[str]
    unavailable: str | None = None
    """Why the task cannot run on this machine (not a failure of the task itself)."""

    def to_json(self) -> dict:
        t = self.entry.thresholds
        return {
            "task": self.entry.id,
            "family": self.entry.family,
            "passed": self.passed,
            "unavailable": self.unavailable,
            "oracle": self.oracle.to_json() if self.oracle else None,
            "noop": self.noop.to_json() if self.noop else None,
            "thresholds": {"oracle_min": t.oracle_min, "noop_max": t.noop_max, "reason": t.reason},
            "problems": self.problems,
        }


def _check(result: TaskResult | None, agent: str) -> tuple[float | None, list[str]]:
    if result is None:
        return None, [f"{agent}: no run"]
    problems = []
    if result.errors:
        reasons = "; ".join(result.error_reasons[:2])
        problems.append(f"{agent}: {result.errors} of {result.runs} sample(s) errored ({reasons})")
    value = result.normalized_mean
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
            verdicts.append(
                Verdict(entry, None, None, False, [f"cannot be loaded: {entry.problem}"])
            )
            continue
        oracle, noop = by_key.get((entry.id, "oracle")), by_key.get((entry.id, "noop"))
        unavailable = next((r.unavailable for r in (oracle, noop) if r and r.unavailable), None)
        if unavailable is not None:
            verdicts.append(Verdict(entry, oracle, noop, True, [], unavailable))
            continue
        oracle_value, problems = _check(oracle, "oracle")
        noop_value, noop_problems = _check(noop, "noop")
        problems += noop_problems
        t = entry.thresholds
        if oracle_value is not None and oracle_value < t.oracle_min:
            problems.append(f"oracle {oracle_value:.3f} < {t.oracle_min}")
        if noop_value is not None and noop_value > t.noop_max:
            problems.append(f"noop {noop_value:.3f} > {t.noop_max}")
        if noop is not None and noop.weak_tests:
            problems.append(
                "weak test(s), passing with nothing done: " + ", ".join(noop.weak_tests)
            )
        verdicts.append(Verdict(entry, oracle, noop, not problems, problems))
    return verdicts

"""When runs that one table puts side by side differ in what they were graded with or ran
on: one task's runs of different task contents (or sidecars, psets, the Python environment
ResearchCodeBench's tests ran in), one family's runs of different graders or judges, runs
on different hardware classes (CPU model / GPU model). Read from the provenance columns
(`_provenance`); runs that record none are left out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd


def given(value: object) -> bool:
    """A recorded value: not None, not the NaN a numeric column holds for none."""
    return value is not None and not (isinstance(value, float) and pd.isna(value))


SEP = " | "
"""How a run whose samples differ shows its values (`_data._shared`)."""


@dataclass(frozen=True)
class Mix:
    """Runs of one scope that differ in one provenance figure."""

    what: str
    """`task contents`, `sidecars`, `psets`, `Python environments`, `graders`, `judges` or
    `hardware classes`."""
    scope: str
    """Where they differ: a task (`rebench prefix_sum/main`), a family, or `all runs`."""
    values: tuple[tuple[str, int], ...]
    """Each value and how many runs hold it, most first."""

    def describe(self) -> str:
        held = "; ".join(f"{v} ({runs_text(n)})" for v, n in self.values)
        return f"{self.scope}: runs with {len(self.values)} different {self.what} — {held}"


# (what, column or columns, grouped by): a table's runs may differ in none of these
CHECKS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("task contents", ("task_hash",), ("family", "task_id")),
    ("sidecars", ("sidecar_hash",), ("family", "task_id")),
    ("psets", ("pset_hash",), ("family", "task_id")),
    ("Python environments", ("environment_hash",), ("family", "task_id")),
    ("graders", ("grader_version",), ("family",)),
    ("judges", ("judge", "judge_model", "judge_prompt"), ("family",)),
    ("hardware classes", ("hardware_class",), ()),
)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def runs_text(n: int) -> str:
    return plural(n, "run")


def _value_of(row: pd.Series, columns: tuple[str, ...]) -> list[str]:
    """A run's value(s) of `columns` (one per differing sample); [] when unrecorded."""
    parts = [row.get(c) for c in columns]
    if not any(given(p) for p in parts):
        return []
    if len(columns) == 1:
        return str(parts[0]).split(SEP)
    judge, model, prompt = (str(p) if given(p) else "" for p in parts)
    details = ", ".join(x for x in (model, f"prompt {prompt}" if prompt else "") if x)
    return [f"{judge} ({details})" if details else judge]


def counts(runs: pd.DataFrame, columns: tuple[str, ...]) -> Counter[str]:
    """How many runs hold each value of `columns` (a run of differing samples, each)."""
    found: Counter[str] = Counter()
    for _, row in runs.iterrows():
        for value in _value_of(row, columns):
            found[value] += 1
    return found


def mixed_provenance(runs: pd.DataFrame) -> list[Mix]:
    """Every way `runs` (a table's runs) mix versions: one task's runs of different task
    contents, sidecars or psets; one family's runs of different graders or judges; runs of
    different hardware classes. Runs that record nothing (older logs) are left out."""
    if runs.empty:
        return []
    found: list[Mix] = []
    for what, columns, by in CHECKS:
        if not set(columns) <= set(runs.columns):
            continue
        groups = runs.groupby(list(by), sort=True, dropna=False) if by else [((), runs)]
        for key, group in groups:
            held = counts(group, columns)
            if len(held) > 1:
                keys = key if isinstance(key, tuple) else (key,)
                scope = " ".join(str(k) for k in keys) or "all runs"
                found.append(Mix(what, scope, tuple(held.most_common())))
    return found

"""The results card: what ran, where, under which versions and budgets, and every way
its runs mix versions (`_mixes`).

Built from the provenance columns (`_provenance`) of the runs table, for `labcoat card`
(Markdown, for a paper's appendix) and the top of `labcoat report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from labcoat._unavailable import LABEL
from labcoat._util.inspect_names import NO_MODEL
from labcoat.analysis._data import RunData
from labcoat.analysis._mixes import Mix, counts, given, mixed_provenance, plural, runs_text


@dataclass(frozen=True)
class ResultsCard:
    """The card's sections, each a list of (field, value) lines, and a task table."""

    sections: list[tuple[str, list[tuple[str, str]]]]
    tasks: pd.DataFrame
    mixes: list[Mix] = field(default_factory=list)
    unrecorded: int = 0
    """Runs whose scores carry no provenance (older logs, errored runs)."""


NO_SANDBOX = "no sandbox of its own"
INPUTS = (
    ("sidecar", "sidecar_hash"),
    ("pset", "pset_hash"),
    ("environment", "environment_hash"),
    ("version", "task_version"),
)
"""A task's other inputs, as the card's task table names them."""
TASK_COLUMNS = ["family", "task_id", "task_hash", "files", "inputs", "grader", "runs"]


def _listing(
    runs: pd.DataFrame, columns: tuple[str, ...], none: str = "—", missing: str | None = None
) -> str:
    """Each value of `columns` over `runs`, with its run count when they differ; runs
    without one are left out, or counted as `missing` when that is given."""
    found = counts(runs, columns)
    if missing is not None and (lacking := len(runs) - sum(found.values())) > 0:
        found[missing] += lacking
    if not found:
        return none
    if len(found) == 1:
        return next(iter(found))
    return "; ".join(f"{v} ({runs_text(n)})" for v, n in found.most_common())


def _with(runs: pd.DataFrame, **columns: pd.Series) -> pd.DataFrame:
    return runs.assign(**columns)


def _short(value: object, n: int = 12) -> str | None:
    if not given(value):
        return None
    text = str(value)
    dirty = text.endswith("-dirty")
    return text.removesuffix("-dirty")[:n] + (", with uncommitted changes" if dirty else "")


def _asked_reported(run: pd.Series) -> str:
    """`asked → reported`; an agent that called no model (oracle, noop, human) by name:
    what it reports is its own tag (`labcoat/oracle`), and `none/none` is Inspect's
    placeholder."""
    if not given(run.get("model")) or run["model"] in ("", NO_MODEL):
        return f"{run.get('agent') or 'an'} agent (no model)"
    reported = run.get("model_reported")
    return f"{run['model']} → {reported if given(reported) else '—'}"


def _what_ran(data: RunData, runs: pd.DataFrame) -> list[tuple[str, str]]:
    errors = int((runs["status"] == "error").sum())
    families = runs.groupby("family", sort=True)["task_id"].nunique()
    started = pd.to_datetime(runs["started_at"], errors="coerce", utc=True).dropna()
    when = (
        f"{started.min():%Y-%m-%d %H:%M} to {started.max():%Y-%m-%d %H:%M} UTC"
        if not started.empty
        else "—"
    )
    by_label = runs.groupby("label", sort=True).size()
    epochs = pd.to_numeric(runs["epoch"], errors="coerce").max()
    model = _with(runs, _m=runs.apply(_asked_reported, axis=1) if len(runs) else None)
    return [
        (
            "Runs",
            f"{len(runs)} ({errors} errored)"
            # the budget's: they ran nothing, so they are in no figure
            + (f"; {len(data.not_started)} not started (budget)" if len(data.not_started) else "")
            + (f"; {len(data.cannot_run_here)} {LABEL}" if len(data.cannot_run_here) else "")
            + (f"; epochs: up to {epochs:.0f}" if given(epochs) else ""),
        ),
        ("Logs", str(len(data.logs))),
        ("Families", ", ".join(f"{f} ({plural(n, 'task')})" for f, n in families.items()) or "—"),
        (
            "Agents and models",
            ", ".join(f"{lab} ({runs_text(n)})" for lab, n in by_label.items()) or "—",
        ),
        ("Model asked → reported", _listing(model, ("_m",))),
        ("When", when),
    ]


def _versions(runs: pd.DataFrame) -> list[tuple[str, str]]:
    build = _with(
        runs,
        _b=runs["labcoat_version"].fillna("?")
        + runs["labcoat_commit"].map(lambda c: f" (commit {_short(c)})" if _short(c) else ""),
    )
    lines = [
        ("labcoat", _listing(build[runs["labcoat_version"].notna()], ("_b",))),
        ("Inspect AI", _listing(runs, ("inspect_version",))),
    ]
    for family, group in runs.groupby("family", sort=True):
        lines.append((f"Grader ({family})", _listing(group, ("grader_version",))))
        if group["judge"].notna().any():
            judges = ("judge", "judge_model", "judge_prompt")
            lines.append((f"Judge ({family})", _listing(group, judges)))
    return lines


def _hardware(runs: pd.DataFrame) -> pd.Series:
    def line(r: pd.Series) -> str | None:
        if not given(r.get("cpu")):
            return None
        gpus = r.get("gpu_count")
        gpu = f"{gpus:.0f}× {r['gpu']}" if given(r.get("gpu")) and gpus else "no GPU"
        driver = f", driver {r['gpu_driver']}" if given(r.get("gpu_driver")) else ""
        cores = f"{r['cpus']:.0f} cores" if pd.notna(r.get("cpus")) else "? cores"
        memory = f"{r['memory_gb']:g} GB" if pd.notna(r.get("memory_gb")) else "? GB"
        return f"{r['cpu']}, {cores}, {memory} memory, {gpu}{driver}"

    return runs.apply(line, axis=1) if not runs.empty else pd.Series(dtype=object)


def _isolation(r: pd.Series) -> str | None:
    if not given(r.get("isolation")):
        return None
    mechanisms = (("limits", "limit_mechanism"), ("disk", "disk_mechanism"))
    held = [f"{name} by {r[c]}" for name, c in mechanisms if given(r.get(c))]
    return ", ".join([str(r["isolation"]), *held])


def _where(runs: pd.DataFrame) -> list[tuple[str, str]]:
    iso = runs.apply(_isolation, axis=1) if not runs.empty else pd.Series(dtype=object)
    marked = _with(runs, _h=_hardware(runs), _i=iso)
    return [
        ("Hardware", _listing(marked, ("_h",))),
        ("Isolation", _listing(marked, ("_i",))),
    ]


def _number(value: object, unit: str = "") -> str:
    if not given(value):
        return "none"
    return f"{float(value):g}{unit}"  # type: ignore[arg-type]


def _task_budgets(runs: pd.DataFrame) -> str:
    """Each budget with the tasks that have it: `20 min: prefix_sum/main; none: ...`."""
    tasks: dict[str, list[str]] = {}
    for task, minutes in zip(runs["task_id"], runs["time_limit_minutes"], strict=True):
        held = tasks.setdefault(_number(minutes, " min"), [])
        if str(task) not in held:
            held.append(str(task))
    return "; ".join(f"{b}: {', '.join(sorted(t))}" for b, t in sorted(tasks.items())) or "—"


SAMPLE_LIMITS = (
    ("time", "sample_time_limit", " s"),
    ("working time", "sample_working_limit", " s"),
    ("tokens", "sample_token_limit", ""),
    ("messages", "sample_message_limit", ""),
    ("cost", "sample_cost_limit", " USD"),
)
"""(name, column, unit) of Inspect's sample limits; the agent's own have the same names."""
AGENT_LIMITS = tuple((n, c.replace("sample_", "agent_", 1), u) for n, c, u in SAMPLE_LIMITS)
SANDBOX_LIMITS = (
    ("memory", "sandbox_memory_mb", " MB"),
    ("CPUs", "sandbox_cpus", ""),
    ("disk", "sandbox_disk_mb", " MB"),
    ("processes", "sandbox_pids", ""),
)


def _limits_text(
    r: pd.Series, named: tuple[tuple[str, str, str], ...], blank_if_none: bool = True
) -> str | None:
    """`name value unit, ...` of one run's limits; None when it has none (`blank_if_none`)."""
    if blank_if_none and all(pd.isna(r.get(c)) for _, c, _ in named):
        return None
    return ", ".join(f"{name} {_number(r.get(c), unit)}" for name, c, unit in named)


def _budgets(runs: pd.DataFrame) -> list[tuple[str, str]]:
    def apply(named: tuple[tuple[str, str, str], ...], blank_if_none: bool = True) -> object:
        if runs.empty:
            return None
        return runs.apply(lambda r: _limits_text(r, named, blank_if_none), axis=1)

    marked = _with(
        runs,
        _l=apply(SAMPLE_LIMITS, blank_if_none=False),
        _s=apply(SANDBOX_LIMITS),
        _a=apply(AGENT_LIMITS),
    )
    return [
        ("Sample limits (Inspect)", _listing(marked, ("_l",))),
        # the research agent's own budget, as it applied it; other agents apply none
        ("Agent budgets", _listing(marked, ("_a",), missing="none of the agent's own")),
        ("Task time budgets", _task_budgets(runs)),
        # a run that records its provenance but no sandbox limits had no sandbox of its own
        ("Sandbox limits", _listing(marked[_recorded(marked)], ("_s",), missing=NO_SANDBOX)),
    ] + [
        (f"Family limits ({family})", _listing(group, ("family_limits",)))
        for family, group in runs.groupby("family", sort=True)
        if group["family_limits"].notna().any()
    ]


def _tasks(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (family, task), group in runs.groupby(["family", "task_id"], sort=True):
        inputs = [
            f"{name} {_listing(group, (column,))}"
            for name, column in INPUTS
            if group[column].notna().any()
        ]
        files = pd.to_numeric(group["task_files"], errors="coerce").dropna()
        rows.append(
            {
                "family": family,
                "task_id": task,
                "task_hash": _listing(group, ("task_hash",)),
                "files": f"{files.max():.0f}" if not files.empty else "—",
                "inputs": ", ".join(inputs) or "—",
                "grader": _listing(group, ("grader_version",)),
                "runs": len(group),
            }
        )
    return pd.DataFrame(rows, columns=TASK_COLUMNS)


def _recorded(runs: pd.DataFrame) -> pd.Series:
    return runs[["task_hash", "grader_version", "labcoat_version"]].notna().any(axis=1)


def results_card(data: RunData) -> ResultsCard:
    """The card of `data`'s runs (humans' imported runs left out: labcoat did not run them)."""
    runs = data.runs
    if "imported" in runs:
        runs = runs[runs["imported"].ne(True)]
    recorded = _recorded(runs) if not runs.empty else pd.Series(dtype=bool)
    sections = [
        ("What ran", _what_ran(data, runs)),
        ("Versions", _versions(runs)),
        ("Where", _where(runs)),
        ("Budgets", _budgets(runs)),
    ]
    return ResultsCard(
        sections=sections,
        tasks=_tasks(runs),
        mixes=mixed_provenance(runs),
        unrecorded=int((~recorded).sum()),
    )

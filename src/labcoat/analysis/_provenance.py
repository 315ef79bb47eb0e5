"""Provenance columns of a sample: the versions, hashes, machine and limits it ran under.

Read from the score's `provenance` and `sandbox` metadata (`labcoat.families._provenance`)
and, where a score lacks them (an older log, an errored sample), from the log itself:
Inspect's version, the eval's sample limits and the models that answered. A regraded
sample's run-side figures (machine, isolation, limits, the model, labcoat's build) are
its original run's; its grading-side figures (task contents, grader, judge) are the
newest grading's, as its score is.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.scorer import Score

from labcoat.analysis._family import Row, num
from labcoat.families._provenance import PROVENANCE
from labcoat.families._score import SANDBOX

SAMPLE_LIMIT_COLUMNS = {
    "time": "sample_time_limit",
    "working": "sample_working_limit",
    "token": "sample_token_limit",
    "message": "sample_message_limit",
    "cost": "sample_cost_limit",
}
"""Inspect's sample limits (seconds, tokens, messages, dollars) -> column."""
AGENT_LIMIT_COLUMNS = {
    "time": "agent_time_limit",
    "working": "agent_working_limit",
    "token": "agent_token_limit",
    "cost": "agent_cost_limit",
    "message": "agent_message_limit",
}
"""The research agent's own budget as it applied it -> column."""
SANDBOX_LIMIT_COLUMNS = {
    "memory_mb": "sandbox_memory_mb",
    "cpus": "sandbox_cpus",
    "disk_mb": "sandbox_disk_mb",
    "pids": "sandbox_pids",
}
GRADING_COLUMNS = [
    "task_hash",
    "task_files",
    "grader_version",
    "sidecar_hash",
    "pset_hash",
    "environment_hash",
    "task_version",
    "judge",
    "judge_model",
    "judge_prompt",
    "judge_prompt_version",
]
RUN_COLUMNS = [
    "labcoat_version",
    "labcoat_commit",
    "inspect_version",
    "model_reported",
    "models_used",
    "models_reported",
    "scoring_models_reported",
    "cpu",
    "cpus",
    "memory_gb",
    "gpu",
    "gpu_count",
    "gpu_driver",
    "hardware_class",
    "isolation",
    "limit_mechanism",
    "disk_mechanism",
    *SAMPLE_LIMIT_COLUMNS.values(),
    *AGENT_LIMIT_COLUMNS.values(),
    *SANDBOX_LIMIT_COLUMNS.values(),
    "family_limits",
    "grader_limits",
]
COLUMNS = [*GRADING_COLUMNS, *RUN_COLUMNS]
"""Every provenance column of the samples and runs tables."""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _meta(score: Score | None, key: str) -> dict[str, Any]:
    return _dict((score.metadata or {}).get(key)) if score is not None else {}


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def log_fields(log: EvalLog) -> Row:
    """What the log says for all its samples: Inspect's version and the sample limits."""
    config = log.eval.config
    limits = {
        "time": config.time_limit,
        "working": config.working_limit,
        "token": config.token_limit,
        "message": config.message_limit,
        "cost": config.cost_limit,
    }
    return {
        "inspect_version": _text((log.eval.packages or {}).get("inspect_ai")),
        **{SAMPLE_LIMIT_COLUMNS[k]: num(v) for k, v in limits.items()},
    }


def hardware_class(cpu: Any, gpu: Any) -> str | None:
    """The machine's class for comparisons: its CPU model and GPU model."""
    if cpu is None and gpu is None:
        return None
    return f"{cpu or '?'} / {gpu or 'no GPU'}"


def _grading(score: Score | None) -> Row:
    record = _meta(score, PROVENANCE)
    task, grader, inputs = (_dict(record.get(k)) for k in ("task", "grader", "inputs"))
    judge = _dict(inputs.get("judge"))
    model = judge.get("model")  # a dict when the judge's model could not be told
    known = {"labcoat", "code"} <= set(grader)
    version = f"{grader['labcoat']}+{grader['code']}" if known else None  # as regrade labels it
    return {
        "task_hash": _text(task.get("hash")),
        "task_files": num(task.get("files")),
        "grader_version": version,
        "sidecar_hash": _text(_dict(inputs.get("sidecar")).get("hash")),
        "pset_hash": _text(_dict(inputs.get("pset")).get("hash")),
        "environment_hash": _text(_dict(inputs.get("environment")).get("hash")),
        "task_version": _text(inputs.get("task_version")),
        "judge": _text(judge.get("name")),
        "judge_model": None if isinstance(model, dict) else _text(model),
        "judge_prompt": _text(judge.get("prompt")),
        "judge_prompt_version": _text(judge.get("prompt_version")),
    }


def _run(score: Score | None, sample: EvalSample, logged: Row) -> Row:
    record = _meta(score, PROVENANCE)
    build, model, hw = (_dict(record.get(k)) for k in ("labcoat", "model", "hardware"))
    limits = _dict(record.get("limits"))
    sample_limits, sandbox_limits = _dict(limits.get("sample")), _dict(limits.get("sandbox"))
    agent_limits = _dict(limits.get("agent"))
    sandbox = _meta(score, SANDBOX)
    commit = _text(build.get("commit"))
    if commit and build.get("dirty"):
        commit += "-dirty"
    reported = _text(model.get("reported")) or _text(sample.output.model if sample.output else None)
    row: Row = {
        **logged,
        "labcoat_version": _text(build.get("version")),
        "labcoat_commit": commit,
        "inspect_version": _text(record.get("inspect_ai")) or logged.get("inspect_version"),
        "model_reported": reported,
        "models_used": "; ".join(sorted(sample.model_usage or {})) or None,
        "models_reported": _counted(model.get("calls")),
        "scoring_models_reported": _counted(model.get("scoring_calls")),
        "cpu": _text(hw.get("cpu")),
        "cpus": num(hw.get("cpus")),
        "memory_gb": num(hw.get("memory_gb")),
        "gpu": _text(hw.get("gpu")),
        "gpu_count": num(hw.get("gpus")),
        "gpu_driver": _text(hw.get("gpu_driver")),
        "hardware_class": hardware_class(_text(hw.get("cpu")), _text(hw.get("gpu"))),
        "isolation": _text(sandbox.get("isolation")),
        "limit_mechanism": _text(sandbox.get("limits")),
        "disk_mechanism": _text(sandbox.get("disk")),
        **{c: num(agent_limits.get(k)) for k, c in AGENT_LIMIT_COLUMNS.items()},
        **{c: num(sandbox_limits.get(k)) for k, c in SANDBOX_LIMIT_COLUMNS.items()},
        "family_limits": _family_limits(_dict(limits.get("task"))),
        "grader_limits": _family_limits(_dict(limits.get("grader"))),
    }
    for key, column in SAMPLE_LIMIT_COLUMNS.items():
        if key in sample_limits:  # the sample's own record wins over the eval's config
            row[column] = num(sample_limits[key])
    return row


def _counted(calls: Any) -> str | None:
    """`model ×count; ...` of the models a provider reported over a sample's calls."""
    pairs = sorted(_dict(calls).items())
    return "; ".join(f"{model} ×{count}" for model, count in pairs) or None


def _family_limits(task: dict[str, Any]) -> str | None:
    """The family's own limits, as `name value` pairs (PaperBench's reproduction timeout,
    RE-Bench's scoring timeout, ...); the task's time budget has its own column."""
    pairs = [
        f"{k} {v}"
        for k, v in task.items()
        if k != "time_limit_minutes" and v is not None and not isinstance(v, dict | list)
    ]
    return ", ".join(pairs) or None


def first_score(sample: EvalSample) -> Score | None:
    return next(iter((sample.scores or {}).values()), None)


def provenance_fields(original: EvalSample, graded: EvalSample, logged: Row) -> Row:
    """The provenance columns of one sample: run-side from its run (`original`), grading
    side from its newest grading (`graded`, the same sample when never regraded)."""
    return {**_run(first_score(original), original, logged), **_grading(first_score(graded))}

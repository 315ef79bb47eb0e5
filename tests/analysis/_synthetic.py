"""Synthetic `.eval` logs built with Inspect's log API, in the shapes labcoat writes."""

from __future__ import annotations

import datetime
import itertools
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.event import ToolEvent
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalSample,
    EvalSampleLimit,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.model import ChatMessageUser, ModelUsage
from inspect_ai.scorer import Score

START = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
# text that compresses about as well as real tool output (not a run of one letter)
NOISE = "".join(random.Random(1).choices("abcdefghijklmnopqrstuvwxyz  \n0123456789", k=1 << 16))


def noise(size: int, offset: int) -> str:
    start = (offset * 7919) % (len(NOISE) - size) if size < len(NOISE) else 0
    return NOISE[start : start + size]


_ids = itertools.count(1)


@dataclass
class Sample:
    """One sample (task attempt) of a synthetic log."""

    task_id: str = "t1"
    epoch: int = 1
    normalized: float | None = 0.5
    raw: float | None = None
    weight: float | None = None
    error: str | None = None
    sample_id: str | None = None
    value: dict[str, Any] = field(default_factory=dict)  # extra Score.value keys
    score_metadata: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)  # extra sample metadata
    store: dict[str, Any] = field(default_factory=dict)
    tools: list[tuple[str, float]] = field(default_factory=list)  # (function, seconds in)
    total_time: float = 100.0
    tokens: int | None = None
    time_limit_minutes: float | None = None
    tool_output_bytes: int = 0  # padding in each tool result, to weigh logs like real ones
    message_bytes: int = 0  # a transcript: one message of this size per tool call
    limit: str | None = None  # the Inspect limit that stopped the sample

    def to_sample(self, family: str) -> EvalSample:
        score = None
        if self.error is None:
            value: dict[str, Any] = {"raw": self.raw, "normalized": self.normalized, **self.value}
            if self.weight is not None:
                value["weight"] = self.weight
            score = Score(value=value, metadata=self.score_metadata)
        events = [
            ToolEvent(
                id=f"call{i}",
                function=fn,
                arguments={},
                timestamp=START + datetime.timedelta(seconds=t),
                completed=START + datetime.timedelta(seconds=t + 1),
                working_start=t,
                result=noise(self.tool_output_bytes, i),
            )
            for i, (fn, t) in enumerate(self.tools)
        ]
        usage = {"mockllm/model": ModelUsage(total_tokens=self.tokens)} if self.tokens else {}
        messages = (
            [ChatMessageUser(content=noise(self.message_bytes, i)) for i in range(len(self.tools))]
            if self.message_bytes
            else []
        )
        return EvalSample(
            id=self.sample_id or self.task_id,
            messages=messages,
            epoch=self.epoch,
            input="do research",
            target="",
            metadata={
                "family": family,
                "task_id": self.task_id,
                "title": f"Task {self.task_id}",
                "time_limit_minutes": self.time_limit_minutes,
                **self.metadata,
            },
            scores={"scorer": score} if score is not None else None,
            store=self.store,
            events=events,
            error=EvalError(message=self.error, traceback="", traceback_ansi="")
            if self.error
            else None,
            limit=EvalSampleLimit(type=self.limit, limit=1) if self.limit else None,
            model_usage=usage,
            started_at=START.isoformat(),
            total_time=self.total_time,
            working_time=self.total_time,
        )


def write_log(
    folder: Path,
    samples: list[Sample],
    *,
    family: str = "rebench",
    model: str = "mockllm/model",
    agent: str = "research",
    task_args: dict[str, Any] | None = None,
    eval_metadata: dict[str, Any] | None = None,
    status: str = "success",
    expected: list[tuple[str, int]] | None = None,
    eval_set_id: str | None = None,
    task_identity: str | None = None,
    created: str | None = None,
    name: str | None = None,
) -> Path:
    """Write a log of `samples`; `expected` (sample id, epoch) pairs it should have held."""
    n = next(_ids)
    ids = (
        sorted({i for i, _ in expected})
        if expected
        else sorted({s.sample_id or s.task_id for s in samples})
    )
    epochs = (
        max((e for _, e in expected), default=1)
        if expected
        else max((s.epoch for s in samples), default=1)
    )
    spec = EvalSpec(
        created=created or (START + datetime.timedelta(minutes=n)).isoformat(),
        task=f"labcoat/{family}",
        task_id=task_identity or f"task{n}",
        eval_id=f"eval{n}",
        run_id=f"run{n}",
        eval_set_id=eval_set_id,
        dataset=EvalDataset(name=family, samples=len(ids), sample_ids=ids),
        model=model,
        config=EvalConfig(epochs=epochs),
        task_args={"agent": agent, **(task_args or {})},
        metadata={"labcoat_family": family, **(eval_metadata or {})},
    )
    log = EvalLog(
        eval=spec,
        status=status,  # type: ignore[arg-type]
        samples=[s.to_sample(family) for s in samples],
        error=EvalError(message="boom", traceback="", traceback_ansi="")
        if status == "error"
        else None,
    )
    path = folder / (name or f"log{n:03d}.eval")
    write_eval_log(log, str(path))
    return path


TWO_MODELS = {
    "mockllm/a": {"t1": [0.2, 0.4], "t2": [0.9], "t3": [0.5, 0.7]},
    "mockllm/b": {"t1": [0.1], "t2": [0.5, 0.3], "t4": [0.8]},
}
"""Two models' normalized scores by task (runs in epoch order): two shared tasks, one each
of their own; the error-bar tests compute their figures by hand from these."""


def write_two_models(folder: Path) -> None:
    """One log per model of TWO_MODELS in `folder`."""
    for model, runs in TWO_MODELS.items():
        samples = [
            Sample(task_id=t, epoch=e, normalized=s)
            for t, scores in runs.items()
            for e, s in enumerate(scores, 1)
        ]
        write_log(folder, samples, model=model)


def score_log(*entries: tuple[float, float | None], final_last: bool = True) -> list[dict]:
    """A RE-Bench score log from (elapsed seconds, raw score) pairs."""
    return [
        {
            "score": raw,
            "message": {},
            "details": {},
            "final": final_last and i == len(entries) - 1,
            "timestamp": 0.0,
            "elapsed_seconds": t,
            "working_seconds": t,
            "tokens": int(t * 10),
            "cost": t / 100,
        }
        for i, (t, raw) in enumerate(entries)
    ]


SPEC = {"start": 0.0, "reference": 10.0, "higher_is_better": True, "final": "best"}
"""A RE-Bench score spec where normalized = raw / 10."""


# --- a demo set: every family, many runs (the browser test and bench/report_build.py) ---

REBENCH_TASKS = ("optimize_kernel/main", "scaling_law/main", "finetune_gpt2/main")
TOOLS = ("bash", "python", "read_file", "write_file", "score")


def _agent_run(
    rng: random.Random, task_id: str, epoch: int, skill: float, minutes: float, fail: float
) -> Sample:
    """A RE-Bench-like research-agent run: steps, tool calls, intermediate scores."""
    if rng.random() < fail:
        return Sample(
            task_id=task_id,
            epoch=epoch,
            error="RuntimeError: sandbox exited (137)",
            time_limit_minutes=minutes,
        )
    length = minutes * 60 * rng.uniform(0.5, 1.0)
    steps, tools, log, best = [], [], [], 0.0
    n = rng.randint(20, 60)
    reliable = rng.random() < 0.6  # the capability-reliability gap: some runs go nowhere
    for i in range(1, n + 1):
        t = length * i / n
        steps.append(
            {
                "step": i,
                "final": i == n,
                "timestamp": t,
                "elapsed_seconds": t,
                "working_seconds": t * 0.9,
                "tokens": 4000 * i,
                "cost": 0.02 * i,
            }
        )
        tool = rng.choice(TOOLS)
        tools.append((tool, t - 1))
        if tool == "score":
            gain = rng.uniform(0, skill) * (1.5 if reliable else 0.1) * (1 - i / (n + 5))
            raw = 10 * min(1.6, best + gain) if rng.random() > 0.1 else None
            best = max(best, (raw or 0) / 10)
            log.append((t, raw))
    log.append((length, 10 * best))
    entries = score_log(*log)
    for e in entries:
        e["tokens"] = int(4000 * n * e["elapsed_seconds"] / length)
        e["cost"] = 0.02 * n * e["elapsed_seconds"] / length
    store = {
        "labcoat:steps": steps,
        "labcoat:stopped_by": {"type": "time" if length > minutes * 55 else "submitted"},
    }
    return Sample(
        task_id=task_id,
        epoch=epoch,
        normalized=best,
        raw=10 * best,
        store=store,
        tools=tools,
        score_metadata={"score_log": entries, "score_spec": SPEC},
        time_limit_minutes=minutes,
        total_time=length + 30,
    )


RG_SIDECAR = {
    "primary": {"metric": "accuracy", "of": ["sub1", "sub2"], "baseline": 0.5, "sota": 0.9},
    "subtasks": [
        {"id": f"sub{k}", "metric": "accuracy", "primary": k < 3}
        | {"baselines": {"baseline": 0.5}, "source": {"json": f"sub{k}"}}
        for k in (1, 2, 3)
    ],
}


def researchgym_figures(raws: dict[str, float | None]) -> tuple[dict, dict]:
    """(score value, score metadata) as ResearchGym's scorer writes them, for `raws`."""
    from labcoat.families.researchgym import Sidecar, summarize

    summary = summarize(Sidecar.model_validate(RG_SIDECAR), raws)
    primary = summary.primary
    value = {
        "completion_rate": summary.completion_rate,
        "improved": float(bool(primary.beats_baseline)),
        "improvement": primary.improvement,
        "primary": primary.value,
        **{f"complete/{r.spec.id}": float(r.complete) for r in summary.subtasks},
    }
    metadata = {
        "subtasks": [r.to_json() for r in summary.subtasks],
        "primary": primary.to_json(),
        "self_reported": False,
    }
    return value, metadata


def _rg_run(rng: random.Random, task_id: str, epoch: int, skill: float) -> Sample:
    raws = {
        f"sub{k}": rng.uniform(0.3, 0.3 + skill) if rng.random() < 0.8 else None for k in (1, 2, 3)
    }
    value, metadata = researchgym_figures(raws)
    primary = metadata["primary"]
    return Sample(
        task_id=task_id,
        epoch=epoch,
        normalized=primary["normalized"],
        raw=value["completion_rate"],
        value=value,
        score_metadata=metadata,
        store={"labcoat:steps": [{"step": 1, "final": True, "elapsed_seconds": 3600}]},
        tools=[(rng.choice(TOOLS[:4]), rng.uniform(0, 3600)) for _ in range(rng.randint(5, 40))],
    )


def _pb_run(rng: random.Random, task_id: str, epoch: int, skill: float) -> Sample:
    def leaf(category: str, weight: int) -> dict:
        return {
            "id": "l",
            "requirements": "",
            "weight": weight,
            "sub_tasks": [],
            "task_category": category,
            "finegrained_task_category": None,
            "score": float(rng.random() < skill),
            "valid_score": True,
        }

    cats = ("Code Development", "Code Execution", "Result Analysis")
    tree = {
        "id": "root",
        "weight": 1,
        "sub_tasks": [
            {
                "id": f"n{i}",
                "weight": rng.randint(1, 3),
                "sub_tasks": [leaf(cats[j % 3], rng.randint(1, 2)) for j in range(i, i + 4)],
            }
            for i in range(3)
        ],
    }
    from labcoat.analysis._family_paperbench import leaves

    score = sum(w * leaf["score"] for leaf, w in leaves(tree))
    return Sample(
        task_id=task_id,
        epoch=epoch,
        normalized=score,
        raw=score,
        score_metadata={"graded_tree": tree},
    )


def _rcb_samples(rng: random.Random, paper: str, epoch: int, skill: float) -> list[Sample]:
    out = []
    for k in range(5):
        passed = rng.random() < skill
        failure = (
            None
            if passed
            else rng.choice(("syntax", "name_import", "type_shape", "wrong_result", "wrong_result"))
        )
        weight = 2 + k
        out.append(
            Sample(
                task_id=paper,
                sample_id=f"{paper}/model.py::snippet{k}",
                epoch=epoch,
                normalized=float(passed),
                raw=float(passed),
                weight=weight,
                metadata={
                    "researchcodebench": {
                        "paper": paper,
                        "snippet": f"snippet{k}",
                        "weight": weight,
                    }
                },
                score_metadata={"passed": passed, "failure": failure, "flags": []},
            )
        )
    return out


def demo_logs(
    folder: Path,
    epochs: int = 4,
    seed: int = 0,
    tool_output_bytes: int = 0,
    message_bytes: int = 0,
) -> dict[str, int]:
    """Logs of every family (two models, several epochs each, some errors) and a human
    CSV at `folder / "humans.csv"`; returns counts for checks."""
    rng = random.Random(seed)
    models = {"openai/model-a": 0.6, "anthropic/model-b": 0.35}
    counts = {"logs": 0, "runs": 0}
    for m, (model, skill) in enumerate(models.items()):
        for epoch in range(1, epochs + 1):
            # each repeat of `labcoat eval` is its own eval set (its own folder)
            sub = folder / f"{model.split('/')[1]}-{epoch}"
            sub.mkdir(parents=True, exist_ok=True)
            rebench = [_agent_run(rng, t, 1, skill, 480, 0.05) for t in REBENCH_TASKS]
            for sample in rebench:
                sample.tool_output_bytes, sample.message_bytes = tool_output_bytes, message_bytes
            write_log(sub, rebench, model=model, eval_set_id=f"s{m}{epoch}")
            rg = [_rg_run(rng, t, 1, skill * 0.8) for t in ("continual/ci", "xai/attr")]
            write_log(sub, rg, family="researchgym", model=model, eval_set_id=f"s{m}{epoch}")
            pb = [_pb_run(rng, t, 1, skill) for t in ("paper-a", "paper-b")]
            write_log(sub, pb, family="paperbench", model=model, eval_set_id=f"s{m}{epoch}")
            for with_paper in (True, False):
                rcb = [
                    s
                    for p in ("fourier-kan", "diff-attn")
                    for s in _rcb_samples(rng, p, 1, skill * (1 if with_paper else 0.7))
                ]
                write_log(
                    sub,
                    rcb,
                    family="researchcodebench",
                    model=model,
                    eval_metadata={"with_paper": with_paper},
                    eval_set_id=f"s{m}{epoch}",
                )
            counts["logs"] += 5
            counts["runs"] += len(REBENCH_TASKS) + 2 + 2 + 4
    lines = ["task,run_id,elapsed_minutes,score"]
    for task in REBENCH_TASKS:
        for h in range(3):
            score = 0.0
            for minutes in (60, 120, 240, 480):
                score = max(score, rng.uniform(0, 1.1) * minutes / 480)
                lines.append(f"{task},h{h},{minutes},{score:.3f}")
            counts["runs"] += 1
    (folder / "humans.csv").write_text("\n".join(lines) + "\n")
    return counts

"""The `rebench` Inspect task: METR task families with labcoat's sidecar."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool

from labcoat._errors import LabcoatError
from labcoat._util.sync import run_sync
from labcoat.agents import agent_solver
from labcoat.families._entry import TaskEntry, ValidationThresholds
from labcoat.families._params import task_parameters
from labcoat.families._registry import select
from labcoat.families._sandbox import sample_sandbox
from labcoat.families.rebench._family import (
    AGENT_HOME,
    TaskFamilyDir,
    family_setup,
    find_families,
    run_operation,
)
from labcoat.families.rebench._oracle import rebench_oracle
from labcoat.families.rebench._scoring import SampleTask, rebench_scorer, score_tool
from labcoat.families.rebench._sidecar import OracleSpec
from labcoat.grading import copy_into_sandbox
from labcoat.sandbox import BwrapConfig, current_bwrap_session
from labcoat.suites import resolve_target

FAMILY = "rebench"


def discover(root: Path) -> list[TaskEntry]:
    """One entry per task of every METR task family at or directly under `root`."""
    entries = []
    for family in find_families(root):
        sidecar = family.sidecar
        if sidecar is not None:
            names = list(sidecar.tasks)
        else:  # only the family's own code knows its tasks
            names = list(run_sync(family_setup, family)["tasks"])
        for name in names:
            spec = sidecar.tasks.get(name) if sidecar else None
            entries.append(
                TaskEntry(
                    id=f"{family.name}/{name}",
                    family=FAMILY,
                    title=spec.title if spec else f"{family.name} ({name})",
                    samples=1,
                    path=family.path,
                    thresholds=spec.thresholds if spec else ValidationThresholds(),
                    extra={
                        "time_limit_minutes": spec.time_limit_minutes if spec else None,
                        "normalized": spec is not None,
                        "timing_sensitive": bool(spec and spec.timing_sensitive),
                        **({} if spec else {"note": "no labcoat.yaml: raw scores only"}),
                    },
                )
            )
    return entries


async def _samples(entries: list[TaskEntry], sandbox_kind: str) -> list[Sample]:
    samples = []
    for entry in entries:
        family = TaskFamilyDir(entry.path)
        task_name = entry.id.split("/", 1)[1]
        setup = await family_setup(family)
        info = setup["tasks"][task_name]
        spec = family.sidecar.tasks.get(task_name) if family.sidecar else None
        resources = spec.resources if spec else None
        memory_mb = int((resources.memory_gb if resources else 4) * 1024)
        cpus = resources.cpus if resources else None
        config = BwrapConfig(
            workdir=AGENT_HOME,
            environment=family.environment,
            network="full_internet" in info["permissions"],
            memory_mb=memory_mb,
            cpus=cpus,
            gpus=bool(resources and resources.gpus),
        )
        metadata: dict[str, Any] = {
            "family": FAMILY,
            "task_id": entry.id,
            "title": entry.title,
            "time_limit_minutes": spec.time_limit_minutes if spec else None,
            "rebench": {
                "family_dir": str(family.path),
                "task": task_name,
                "intermediate_scoring": setup["intermediate_scoring"],
                "has_aggregate": setup["has_aggregate"],
                "score": spec.score.model_dump() if spec else None,
                "timing_sensitive": bool(spec and spec.timing_sensitive),
                "memory_mb": memory_mb,
                "cpus": cpus,
                "oracle": (spec.oracle if spec else OracleSpec()).model_dump(),
            },
        }
        samples.append(
            Sample(
                id=entry.id,
                input=info["instructions"],
                metadata=metadata,
                sandbox=sample_sandbox(sandbox_kind, config),
            )
        )
    return samples


@solver
def rebench_setup() -> Solver:
    """Run the family's start() as root in a setup sandbox that holds /home/agent."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sample = SampleTask.of(state.metadata)
        session = current_bwrap_session()
        home = session.host_path(AGENT_HOME) if session is not None else None
        with tempfile.TemporaryDirectory(prefix="labcoat-start-") as staging:
            # other providers: start() fills a staging folder that is then copied in
            target = home or Path(staging)
            await run_operation(
                sample.family,
                "start",
                sample.task,
                home=target,
                home_writable=True,
                memory_mb=sample.memory_mb,
                cpus=sample.cpus,
            )
            if home is None:
                await copy_into_sandbox(target, AGENT_HOME)
        return state

    return solve


def _family_tools(metadata: dict[str, Any]) -> list[Tool]:
    sample = SampleTask.of(metadata)
    return [score_tool(sample)] if sample.intermediate_scoring else []


@task
@task_parameters()
def rebench(
    target: str = "mini",
    tasks: str | list[str] | None = None,
    agent: str = "research",
    sandbox: str = "bwrap",
) -> Task:
    """RE-Bench-style research-engineering tasks (METR task standard + labcoat.yaml).

    Args:
        target: `mini` (bundled) or a folder of METR task families.
        tasks: task ids (`family/task`) to run; all when omitted.
        agent: `research` (an LLM, needs --model), `oracle` or `noop`.
        sandbox: `bwrap` (default), `docker` or `local`.
    """
    if sandbox == "local":
        raise LabcoatError(
            "rebench tasks need /home/agent and root-only files: use bwrap or docker"
        )
    root = resolve_target(target)
    nested = root / FAMILY
    ids = [tasks] if isinstance(tasks, str) else tasks
    entries = select(discover(nested if nested.is_dir() else root), ids, None)
    if not entries:
        raise LabcoatError(f"{target}: no RE-Bench task families found")
    samples = run_sync(_samples, entries, sandbox)
    return Task(
        dataset=MemoryDataset(samples, name=f"rebench-{Path(target).name}"),
        setup=rebench_setup(),
        solver=agent_solver(agent, oracle=rebench_oracle, family_tools=_family_tools),
        scorer=rebench_scorer(),
        metadata={"labcoat_family": FAMILY, "target": target, "agent": agent},
        # one sample's error (a task that cannot start, a broken grader) is recorded and
        # the others go on; the log still ends as an error, so a re-run retries it
        continue_on_fail=True,
        version=1,
    )

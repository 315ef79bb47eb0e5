"""The `rebench` Inspect task: METR task families, run as METR's own runners run them."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import transcript
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool
from inspect_ai.util import sandbox, store

from labcoat._errors import LabcoatError
from labcoat._util.sync import run_sync
from labcoat.agents import agent_solver
from labcoat.families._entry import TaskEntry, ValidationThresholds
from labcoat.families._params import task_parameters
from labcoat.families._registry import broken_entry, select
from labcoat.families._sandbox import sample_sandbox
from labcoat.families.rebench._family import (
    AGENT_HOME,
    OperationFailed,
    TaskFamilyDir,
    family_setup,
    find_families,
    operation_timeout,
)
from labcoat.families.rebench._oracle import rebench_oracle
from labcoat.families.rebench._protected import snapshot_protected
from labcoat.families.rebench._resources import TaskResources, task_resources
from labcoat.families.rebench._sample import STATE_KEY, SampleTask, sample_operation, sample_state
from labcoat.families.rebench._scoring import (
    rebench_scorer,
    record_intermediate_score,
    score_log_tool,
    score_tool,
)
from labcoat.families.rebench._secrets import (
    MissingSecretsError,
    secret_values,
    use_secrets_file,
)
from labcoat.families.rebench._sidecar import OracleSpec
from labcoat.families.rebench._state import SAMPLE_UUID_PATH, SampleState, copy_image_home
from labcoat.grading import agent_workspace, copy_into_sandbox
from labcoat.sandbox import (
    BwrapConfig,
    PythonEnv,
    current_bwrap_session,
    ensure_image,
    gpu_shortfall,
)
from labcoat.suites import resolve_target

logger = logging.getLogger(__name__)

FAMILY = "rebench"
UNAVAILABLE = "environment unavailable:"


def discover(root: Path) -> list[TaskEntry]:
    """One entry per task of every METR task family at or directly under `root`; a family
    whose files are broken is one entry that says why (the others still load)."""
    entries = []
    for family in find_families(root):
        try:
            entries += _family_entries(family)
        except LabcoatError as ex:
            entries.append(broken_entry(FAMILY, family.path, str(ex), task_id=family.name))
    return entries


def _family_entries(family: TaskFamilyDir) -> list[TaskEntry]:
    family.check()
    names = family.listed_tasks()
    if names is None:  # only the family's own code knows its tasks
        names = list(run_sync(family_setup, family)["tasks"])
    sidecar = family.sidecar
    entries = []
    for name in names:
        spec = sidecar.tasks.get(name) if sidecar else None
        resources = task_resources(family, name)
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
                    "version": family.version,
                    "gpus": resources.gpus,
                    **({} if spec else {"note": "no labcoat.yaml: raw scores only"}),
                },
            )
        )
    return entries


def _metadata(
    entry: TaskEntry,
    family: TaskFamilyDir,
    task_name: str,
    setup: dict[str, Any] | None,
    resources: TaskResources,
    unavailable: str | None,
) -> dict[str, Any]:
    spec = family.sidecar.tasks.get(task_name) if family.sidecar else None
    info = (setup or {}).get("tasks", {}).get(task_name, {})
    manifest_task = family.manifest.task(task_name) if family.manifest else None
    return {
        "family": FAMILY,
        "task_id": entry.id,
        "title": entry.title,
        "time_limit_minutes": spec.time_limit_minutes if spec else None,
        # what the sample reserves where it runs (the manifest's, with the sidecar's on top)
        "resources": {
            "cpus": resources.cpus,
            "memory_gb": resources.memory_mb / 1024,
            "gpus": resources.gpus,
        },
        # what METR's task bridge records of a sample
        "task_family": family.name,
        "task_name": task_name,
        "task_version": family.version,
        "permissions": info.get("permissions", []),
        "rebench": {
            "family_dir": str(family.path),
            "task": task_name,
            "intermediate_scoring": bool((setup or {}).get("intermediate_scoring")),
            "has_aggregate": bool((setup or {}).get("has_aggregate")),
            "has_score": bool((setup or {}).get("has_score")),
            "score": spec.score.model_dump() if spec else None,
            "timing_sensitive": bool(spec and spec.timing_sensitive),
            "memory_mb": resources.memory_mb,
            "cpus": resources.cpus,
            "gpus": resources.gpus,
            "gpu_model": resources.gpu_model,
            "network": "full_internet" in info.get("permissions", []),
            "visible_to_agent": bool(
                manifest_task is not None and manifest_task.scoring.visible_to_agent
            ),
            "timeout": operation_timeout(spec.scoring_timeout_minutes if spec else None),
            "secrets": list((setup or {}).get("required_environment_variables", [])),
            "oracle": (spec.oracle if spec else OracleSpec()).model_dump(),
            "unavailable": unavailable,
        },
    }


def _gpu_shortfall(family: TaskFamilyDir, entry: TaskEntry) -> str | None:
    """Why this machine cannot give the task its GPUs (decided before anything is built)."""
    resources = task_resources(family, entry.id.split("/", 1)[1])
    shortfall = gpu_shortfall(resources.gpus, resources.gpu_model)
    return f"the task {shortfall}" if shortfall else None


async def _family_samples(
    family: TaskFamilyDir, entries: list[TaskEntry], sandbox_kind: str
) -> list[Sample]:
    unavailable: str | None = None
    setup: dict[str, Any] | None = None
    image = None
    short = {e.id: _gpu_shortfall(family, e) for e in entries}
    try:
        # none of its tasks can have their GPUs here: no setup, nothing built (its torch)
        if not all(short.values()):
            setup = await family_setup(family)
            secrets, _ = secret_values(setup["required_environment_variables"])
            image = family.image(secrets)
    except MissingSecretsError:
        raise  # missing secrets stop the run before it starts
    except LabcoatError as ex:
        # this family cannot run here: its samples say why, the other families run
        unavailable = str(ex).removeprefix(UNAVAILABLE).strip()
    listed = family.listed_tasks()
    if setup is not None and listed is not None and family.sidecar is None:
        unlisted = [t for t in setup["tasks"] if t not in listed]
        if unlisted:
            logger.warning(
                "%s: get_tasks() also has %s, which manifest.yaml does not list: add them "
                "there to run them",
                family.name,
                ", ".join(unlisted),
            )
    samples = []
    for entry in entries:
        task_name = entry.id.split("/", 1)[1]
        resources = task_resources(family, task_name)
        reason = unavailable
        if reason is None and setup is not None:
            info = setup["tasks"].get(task_name)
            if info is None:
                reason = f"{family.name}.py has no task {task_name!r}"
            elif info.get("aux_vm"):
                reason = "the task asks for an aux VM (get_aux_vm_spec), which labcoat cannot make"
        if reason is None:
            reason = short[entry.id]
        metadata = _metadata(entry, family, task_name, setup, resources, reason)
        info = (setup or {}).get("tasks", {}).get(task_name, {})
        config = BwrapConfig(
            workdir=AGENT_HOME,
            # a sample that cannot have its GPUs here needs no environment built either
            environment=PythonEnv() if short[entry.id] else family.environment,
            image=image if reason is None else None,
            network=metadata["rebench"]["network"],
            memory_mb=resources.memory_mb,
            cpus=resources.cpus,
            gpus=resources.gpus,
            env={"TASK_ID": entry.id},
            disk_mb=resources.disk_mb,
        )
        samples.append(
            Sample(
                id=entry.id,
                input=info.get("instructions", ""),
                metadata=metadata,
                sandbox=sample_sandbox(sandbox_kind, config),
            )
        )
    return samples


async def _samples(entries: list[TaskEntry], sandbox_kind: str) -> list[Sample]:
    by_family: dict[Path, list[TaskEntry]] = {}
    for entry in entries:
        by_family.setdefault(entry.path, []).append(entry)
    samples: list[Sample] = []
    for path, family_entries in by_family.items():
        samples += await _family_samples(TaskFamilyDir(path), family_entries, sandbox_kind)
    return samples


@solver
def rebench_setup() -> Solver:
    """Prepare the sample's machine as METR's runners do: the family's image, the sample's
    own /root and /protected, start() as root, and a first score of the starting state."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sample = SampleTask.of(state.metadata)
        if sample.unavailable:
            raise LabcoatError(f"{UNAVAILABLE} {sample.unavailable}")
        secrets = sample.secret_values()
        spec = sample.family.image(secrets)
        image = await ensure_image(spec) if spec is not None else None
        machine = SampleState.create(sample.family.path, image, state.uuid)
        store().set(STATE_KEY, str(machine.path))
        started = False
        try:
            session = current_bwrap_session()
            home = session.host_path(AGENT_HOME) if session is not None else None
            with tempfile.TemporaryDirectory(prefix="labcoat-start-") as staging:
                # other providers: start() fills a staging folder that is then copied in
                target = home or Path(staging)
                copy_image_home(image, target)
                await sample_operation(sample, "start", home=target)
                started = True
                snapshot_protected(target, machine)
                if home is None:
                    await copy_into_sandbox(target, AGENT_HOME)
            # the sample's id, where the standard's runners put it (task-artifacts reads it)
            await sandbox().exec(
                ["sh", "-c", f"cat > {SAMPLE_UUID_PATH}"],
                input=str(state.uuid),
                user="root" if session is None or "root" in session.users else None,
            )
            if sample.intermediate_scoring:
                # METR's runners score the starting state (the first entry of the score log)
                await record_intermediate_score(sample, kind="start")
        except BaseException:
            # the sample ends here: what start() began is torn down, the state removed
            with anyio.CancelScope(shield=True):
                if started:
                    await _teardown(state)
                else:
                    store().set(STATE_KEY, None)
                    machine.remove()
            raise
        return state

    return solve


async def _teardown(state: TaskState) -> None:
    """After scoring: the family's teardown(), then the sample's state goes."""
    sample = SampleTask.of(state.metadata)
    sample_dir = sample_state()
    try:
        if sample_dir is not None and not sample.unavailable:
            try:
                async with agent_workspace(AGENT_HOME) as home:
                    run = await sample_operation(sample, "teardown", home=home)
                record = {"teardown": run.result, "output": run.output[-4000:]}
            except (OperationFailed, LabcoatError) as ex:
                record = {"teardown_failed": str(ex)[-4000:]}
            transcript().info(record, source="labcoat.rebench")
    finally:
        if sample_dir is not None:
            store().set(STATE_KEY, None)  # once only (cleanup may follow a failed setup)
            sample_dir.remove()


def _family_tools(metadata: dict[str, Any]) -> list[Tool]:
    sample = SampleTask.of(metadata)
    if not sample.intermediate_scoring:
        return []
    return [score_tool(sample), score_log_tool(sample)]


@task
@task_parameters()
def rebench(
    target: str = "mini",
    tasks: str | list[str] | None = None,
    agent: str = "research",
    sandbox: str = "bwrap",
    secrets: str | None = None,
) -> Task:
    """RE-Bench-style research-engineering tasks (METR task standard + labcoat.yaml).

    Args:
        target: `mini` (bundled) or a folder of METR task families.
        tasks: task ids (`family/task`) to run; all when omitted.
        agent: `research` (an LLM, needs --model), `oracle` or `noop`.
        sandbox: `bwrap` (default), `docker` or `local`.
        secrets: a `.env` file with the families' required environment variables (else
            they come from the environment).
    """
    if sandbox == "local":
        raise LabcoatError(
            "rebench tasks need /home/agent and root-only files: use bwrap or docker"
        )
    use_secrets_file(secrets)
    root = resolve_target(target)
    nested = root / FAMILY
    ids = [tasks] if isinstance(tasks, str) else tasks
    entries = select(discover(nested if nested.is_dir() else root), ids, None)
    broken = [e for e in entries if e.problem]
    if broken:
        raise LabcoatError(f"{broken[0].id}: {broken[0].problem}")
    if not entries:
        raise LabcoatError(f"{target}: no RE-Bench task families found")
    samples = run_sync(_samples, entries, sandbox)
    return Task(
        dataset=MemoryDataset(samples, name=f"rebench-{Path(target).name}"),
        setup=rebench_setup(),
        solver=agent_solver(agent, oracle=rebench_oracle, family_tools=_family_tools),
        scorer=rebench_scorer(),
        cleanup=_teardown,
        metadata={"labcoat_family": FAMILY, "target": target, "agent": agent},
        # one sample's error (a task that cannot start, a broken grader) is recorded and
        # the others go on; the log still ends as an error, so a re-run retries it
        continue_on_fail=True,
        version=1,
    )

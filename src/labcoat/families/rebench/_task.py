"""The `rebench` Inspect task: METR task families, run as METR's own runners run them."""

from __future__ import annotations

import logging
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import transcript
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool
from inspect_ai.util import sandbox, store

from labcoat._errors import LabcoatError, one_line
from labcoat._unavailable import PREFIX
from labcoat._util.lfs import LfsPointerError
from labcoat._util.names import check_name
from labcoat.agents import agent_solver
from labcoat.families._entry import OWN_SYSTEM, SYSTEM, TaskEntry, ValidationThresholds
from labcoat.families._gpu_need import sample_gpu_shortfall
from labcoat.families._params import task_parameters
from labcoat.families._provenance import provenance_prefetch
from labcoat.families._registry import broken_entry, select
from labcoat.families._sandbox import sample_sandbox
from labcoat.families._sidecar_parts import KeepWorkspace
from labcoat.families.rebench._build import HOST_SYSTEM
from labcoat.families.rebench._family import (
    AGENT_HOME,
    OperationFailed,
    TaskFamilyDir,
    family_listing,
    family_setup,
    find_families,
    listing_known,
    operation_timeout,
)
from labcoat.families.rebench._manifest import MANIFEST
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
    reading_secrets_file,
    run_with_secrets_files,
    scoped_secrets_files,
    secret_values,
)
from labcoat.families.rebench._sidecar import SIDECAR, OracleSpec
from labcoat.families.rebench._state import SAMPLE_UUID_PATH, SampleState, copy_image_home
from labcoat.families.rebench._static import static_task_names
from labcoat.grading import KEEP_SPEC, agent_workspace, copy_into_sandbox
from labcoat.sandbox import (
    BwrapConfig,
    EnvironmentBuildError,
    PythonEnv,
    current_bwrap_session,
    ensure_image,
)
from labcoat.suites import resolve_target

logger = logging.getLogger(__name__)

FAMILY = "rebench"
UNAVAILABLE = PREFIX
AUX_VM = "the task asks for an aux VM (get_aux_vm_spec); labcoat makes no VMs"
LISTING_CONCURRENCY = 4  # get_tasks() runs at once while listing


# discovery may build a family's image when get_tasks() needs what install() makes (eval,
# validate, check); listing never builds one (labcoat list, check --no-build)
_IMAGES_FOR_NAMES: ContextVar[bool] = ContextVar("labcoat_rebench_images_for_names", default=True)

PROBLEM_KIND = "problem_kind"
"""`TaskEntry.extra` key of a broken family: the `labcoat check` kind of its problem."""
LISTED_FROM = "listed_from"
"""`TaskEntry.extra` key: where the task's name was read (labcoat.yaml, get_tasks(), ...)."""
FROM_SOURCE = "get_tasks() (its source)"
FROM_CODE = "get_tasks()"
FROM_IMAGE = "get_tasks() (in its image)"


@contextmanager
def without_image_builds() -> Iterator[None]:
    """Discovery inside never builds a family's image (nor runs install()) for its tasks."""
    token = _IMAGES_FOR_NAMES.set(False)
    try:
        yield
    finally:
        _IMAGES_FOR_NAMES.reset(token)


def images_for_names() -> bool:
    """Whether discovery here may build a family's image to learn its tasks."""
    return _IMAGES_FOR_NAMES.get()


def discover(root: Path, task_ids: Iterable[str] | None = None) -> list[TaskEntry]:
    """One entry per task of every METR task family at or directly under `root`; a family
    whose files are broken is one entry that says why (the others still load).

    A family's tasks are its sidecar's, else get_tasks()'s keys: read from its source when
    the source spells them out, else from get_tasks() run in the family's environment
    (all such families at once; one line on stderr says so). The manifest only adds
    metadata, and lists the tasks of a family whose get_tasks() cannot run yet.

    `task_ids` (`family/task`): only the families they name are loaded, so no other
    family's code runs (when one names no family here, all are, for the error's hints).
    """
    families = _named(find_families(root), task_ids)
    may_build = images_for_names()
    listings = _listings([f for f in families if _needs_code(f)])
    entries = []
    for family in families:
        try:
            entries += _family_entries(family, listings.get(family.path), may_build)
        except LabcoatError as ex:
            entries.append(_broken(family, ex))
    return entries


def _named(families: list[TaskFamilyDir], task_ids: Iterable[str] | None) -> list[TaskFamilyDir]:
    """The families `task_ids` name (`family/task`, or a family's own name, as a family
    of one task is named): all without ids; none when no id names a RE-Bench family; all
    when `family/task` ids name no family here (a typo: the error then suggests from
    every task)."""
    ids = list(task_ids or [])
    if not ids:
        return families
    named = [f for f in families if f.name in {i.split("/", 1)[0] for i in ids}]
    return named or (families if any("/" in i for i in ids) else [])


def problem_kind(error: LabcoatError) -> str:
    """The `labcoat check` kind of a family's load failure."""
    if isinstance(error, MissingSecretsError):
        return "secrets"
    if isinstance(error, LfsPointerError):
        return "lfs"
    if isinstance(error, EnvironmentBuildError):
        # its subclasses are image builds (build steps, install(), a system's packages)
        return "environment" if type(error) is EnvironmentBuildError else "build"
    return "load"


def _broken(family: TaskFamilyDir, error: LabcoatError) -> TaskEntry:
    kind = problem_kind(error)
    problem = str(error)
    if kind == "secrets" and not problem.startswith(UNAVAILABLE):
        problem = f"{UNAVAILABLE} {problem}"  # not broken: it cannot run here (no secret)
    entry = broken_entry(FAMILY, family.path, problem, task_id=family.name)
    return replace(entry, extra={PROBLEM_KIND: kind})


def _names_from_files(family: TaskFamilyDir) -> tuple[list[str], str] | None:
    """(tasks, where they were read) when no code must run for them, else None."""
    family.check()
    if family.sidecar is not None:
        return list(family.sidecar.tasks), SIDECAR
    names = static_task_names(family.module)
    if names is not None:
        return names, FROM_SOURCE
    listed = list(family.manifest.tasks) if family.manifest is not None else []
    if listed and secret_values(family.declared_secrets)[1]:
        return listed, MANIFEST  # its code may not run without them: `check` says so
    return None


def _needs_code(family: TaskFamilyDir) -> bool:
    try:
        return _names_from_files(family) is None
    except LabcoatError:
        return False  # broken files: its entry says why


def _listings(families: list[TaskFamilyDir]) -> dict[Path, dict[str, Any] | LabcoatError]:
    """family_listing() of each family (its result or its error), run at once."""
    if not families:
        return {}
    # what will run: not known yet, and not stopped by missing secrets
    todo = [
        f.name
        for f in families
        if not listing_known(f) and not secret_values(f.declared_secrets)[1]
    ]
    if todo:
        shown = ", ".join(todo[:5]) + (f" and {len(todo) - 5} more" if len(todo) > 5 else "")
        sys.stderr.write(
            f"labcoat: running get_tasks() of {len(todo)} task famil"
            f"{'y' if len(todo) == 1 else 'ies'} in {'its' if len(todo) == 1 else 'their'} "
            f"Python environment (no image; the source does not spell out the tasks): {shown}\n"
        )
    return run_with_secrets_files(_gather_listings, families)


async def _gather_listings(
    families: list[TaskFamilyDir],
) -> dict[Path, dict[str, Any] | LabcoatError]:
    found: dict[Path, dict[str, Any] | LabcoatError] = {}
    limit = anyio.CapacityLimiter(LISTING_CONCURRENCY)

    async def one(family: TaskFamilyDir) -> None:
        async with limit:
            try:
                found[family.path] = await family_listing(family)
            except LabcoatError as ex:
                found[family.path] = ex

    async with anyio.create_task_group() as group:
        for family in families:
            group.start_soon(one, family)
    return found


def _names_from_code(
    family: TaskFamilyDir, listing: dict[str, Any] | LabcoatError | None, may_build: bool
) -> tuple[list[str], str]:
    if isinstance(listing, dict):
        return list(listing["tasks"]), FROM_CODE
    error = listing or LabcoatError(f"{family.name}: get_tasks() was not run")
    needs_image = family.image() is not None and type(error) is not EnvironmentBuildError
    if isinstance(error, MissingSecretsError) or not needs_image:
        raise error  # its image would not help: the family is broken here
    # the standard runs get_tasks() after install(): it may need what the image holds
    listed = list(family.manifest.tasks) if family.manifest is not None else []
    if listed:
        return listed, MANIFEST
    if may_build:
        return list(run_with_secrets_files(family_setup, family)["tasks"]), FROM_IMAGE
    raise LabcoatError(
        f"{family.name}: get_tasks() fails without the family's image (build steps, "
        f"install()), which listing does not build ({one_line(error)}); `labcoat check` "
        f"builds it, or list the tasks in {MANIFEST}"
    )


def _family_entries(
    family: TaskFamilyDir, listing: dict[str, Any] | LabcoatError | None, may_build: bool
) -> list[TaskEntry]:
    names, source = _names_from_files(family) or _names_from_code(family, listing, may_build)
    listed_in = family.path / source if source in (SIDECAR, MANIFEST) else family.module
    for name in names:  # a task's name goes into its id: plain text only
        check_name(name, listed_in, "tasks" if source in (SIDECAR, MANIFEST) else source)
    sidecar = family.sidecar
    system = family.system
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
                    "gpu_model": resources.gpu_model,
                    SYSTEM: system,
                    OWN_SYSTEM: system != HOST_SYSTEM,
                    LISTED_FROM: source,
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
        # read by the research agent, as every family writes it: web search only with network
        "network": "full_internet" in info.get("permissions", []),
        KEEP_SPEC: (spec.keep_workspace if spec else KeepWorkspace()).to_metadata(),
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
            # the task's `secrets` file (its path, never its values), read again when scored
            "secrets_files": [str(f) for f in scoped_secrets_files()],
            "oracle": (spec.oracle if spec else OracleSpec()).model_dump(),
            "unavailable": unavailable,
        },
    }


def _gpu_shortfall(family: TaskFamilyDir, entry: TaskEntry) -> str | None:
    """Why this machine cannot give the task its GPUs (decided before anything is built)."""
    resources = task_resources(family, entry.id.split("/", 1)[1])
    return sample_gpu_shortfall(resources.gpus, resources.gpu_model)


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
    if setup is not None and any(e.extra.get(LISTED_FROM) == MANIFEST for e in entries):
        _warn_unlisted(family, list(setup["tasks"]))
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
                reason = AUX_VM
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


def _warn_unlisted(family: TaskFamilyDir, tasks: list[str]) -> None:
    """Tasks were listed from the manifest because get_tasks() could not run without the
    family's image: those it has now, in its image, and the manifest lacks were not."""
    listed = family.manifest.tasks if family.manifest is not None else {}
    unlisted = [t for t in tasks if t not in listed]
    if unlisted:
        logger.warning(
            "%s: get_tasks() (after install()) also has %s, which were not listed: it "
            "fails without the family's image, so %s's tasks were listed; add them there "
            "to run them",
            family.name,
            ", ".join(unlisted),
            MANIFEST,
        )


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
        # the task folder's content hash (seconds for gigabytes) is under way while the
        # agent works, not on the event loop when the sample is scored (see provenance)
        provenance_prefetch(state.metadata)
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
    # the file is read while this call lists and builds its samples, then by those samples
    # only: another task in this process does not see it
    with reading_secrets_file(secrets):
        root = resolve_target(target)
        nested = root / FAMILY
        ids = [tasks] if isinstance(tasks, str) else tasks
        entries = select(discover(nested if nested.is_dir() else root, ids), ids, None)
        broken = [e for e in entries if e.problem]
        if broken:
            raise LabcoatError(f"{broken[0].id}: {broken[0].problem}")
        if not entries:
            raise LabcoatError(f"{target}: no RE-Bench task families found")
        samples = run_with_secrets_files(_samples, entries, sandbox)
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

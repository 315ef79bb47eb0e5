"""The `researchgym` Inspect task: ResearchGym task folders with labcoat's sidecar."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Generate, Solver, TaskState, chain, solver
from inspect_ai.tool import Tool
from inspect_ai.util import sandbox as sandbox_env
from inspect_ai.util import store

from labcoat._errors import LabcoatError, TaskDataError
from labcoat.agents import agent_solver
from labcoat.families._entry import TaskEntry, ValidationThresholds
from labcoat.families._gpu_need import (
    gpu_need_metadata,
    require_gpus,
    sample_gpu_shortfall,
    without_gpu_needs,
)
from labcoat.families._params import task_parameters
from labcoat.families._provenance import provenance_prefetch
from labcoat.families._registry import broken_entry, select
from labcoat.families._sandbox import sample_sandbox
from labcoat.families._sidecar_parts import KeepWorkspace
from labcoat.families.researchgym._folder import (
    DESCRIPTION,
    INSTALL,
    TaskFolder,
    find_task_dirs,
    folder_problem,
)
from labcoat.families.researchgym._git import init_workspace_repo
from labcoat.families.researchgym._instructions import instructions
from labcoat.families.researchgym._oracle import researchgym_oracle
from labcoat.families.researchgym._sample import KEY, SampleInfo, sidecar_used
from labcoat.families.researchgym._scoring import GIT_SETUP, UNDECLARED_NOTE, researchgym_scorer
from labcoat.families.researchgym._sidecar import Sidecar
from labcoat.grading import KEEP_SPEC, copy_into_sandbox
from labcoat.sandbox import DEFAULT_DISK_MB, DEFAULT_WORKDIR, BwrapConfig
from labcoat.suites import resolve_target

logger = logging.getLogger(__name__)

FAMILY = "researchgym"
UPSTREAM_TIME_LIMIT_MINUTES = 720
INSTALL_TIMEOUT = 3600


def _entry(folder: TaskFolder) -> TaskEntry:
    sidecar = folder.sidecar
    extra: dict[str, Any] = {
        "time_limit_minutes": (
            sidecar.time_limit_minutes if sidecar else UPSTREAM_TIME_LIMIT_MINUTES
        ),
        "normalized": sidecar is not None,
        "self_reported": sidecar.grading.self_reported if sidecar else True,
        "sidecar": folder.sidecar_origin,
    }
    if sidecar is not None:
        extra["subtasks"] = len(sidecar.subtasks)
        extra["primary_subtasks"] = len(sidecar.primary_subtasks)
        extra["subtask_ids"] = [s.id for s in sidecar.subtasks]
        extra["primary_subtask_ids"] = [s.id for s in sidecar.primary_subtasks]
        extra["primary_metric"] = sidecar.primary.metric
        extra["gpus"] = sidecar.resources.gpus
    else:
        extra["subtasks"] = None
        extra["note"] = UNDECLARED_NOTE
        if folder.overlay.mismatch:
            extra["overlay"] = folder.overlay.mismatch
    return TaskEntry(
        id=folder.name,
        family=FAMILY,
        title=folder.title,
        samples=1,
        path=folder.path,
        thresholds=sidecar.thresholds if sidecar else ValidationThresholds(),
        extra=extra,
        has_oracle=has_oracle(sidecar),
    )


def has_oracle(sidecar: Sidecar | None) -> bool:
    return sidecar is not None and bool(sidecar.oracle.files or sidecar.oracle.run)


def discover(root: Path) -> list[TaskEntry]:
    """One entry per task folder at or directly under `root`; a folder that is meant to
    be a task but cannot be loaded is an entry with its problem, not skipped."""
    entries = []
    for path in find_task_dirs(root):
        problem = folder_problem(path)
        if problem is not None:
            entries.append(broken_entry(FAMILY, path, problem))
            continue
        try:
            entries.append(_entry(TaskFolder(path)))
        except TaskDataError as ex:
            entries.append(broken_entry(FAMILY, path, str(ex)))
        except (OSError, UnicodeDecodeError) as ex:
            entries.append(broken_entry(FAMILY, path, f"{path / DESCRIPTION}: {ex}"))
    return entries


def _sample(folder: TaskFolder, sandbox_kind: str, idea_hint: bool) -> Sample:
    sidecar = folder.sidecar
    time_limit = sidecar.time_limit_minutes if sidecar else UPSTREAM_TIME_LIMIT_MINUTES
    memory_mb = int((sidecar.resources.memory_gb if sidecar else 4) * 1024)
    # a task that asks for the network gets it through labcoat's proxy, which refuses
    # and records the blocklist's URLs (see docs/sandbox.md)
    network = bool(sidecar and sidecar.network)
    self_reported = sidecar.grading.self_reported if sidecar else True
    if idea_hint and folder.idea_hint() is None:
        raise LabcoatError(f"{folder.path}: --idea-hint asked for, but there is no idea_hint.txt")
    gpus = sidecar.resources.gpus if sidecar else 0
    config = BwrapConfig(
        workdir=DEFAULT_WORKDIR,
        environment=folder.environment,
        network=network,
        blocklist=folder.blocklist.to_json(),
        memory_mb=memory_mb,
        gpus=gpus,
        disk_mb=sidecar.resources.disk_mb if sidecar else DEFAULT_DISK_MB,
    )
    short = sample_gpu_shortfall(gpus)
    if short:
        config = without_gpu_needs(config)
    # what the agent may know: settings, metrics and the description's baselines (no SOTA)
    primary = sidecar.primary_subtasks if sidecar else ()
    public_subtasks = [
        {
            "id": s.id,
            "primary": s in primary,
            "metrics": [
                {
                    "id": m.id,
                    "metric": m.metric,
                    "higher_is_better": m.higher_is_better,
                    "baselines": dict(m.baselines),
                }
                for m in s.all_metrics
            ],
        }
        for s in (sidecar.subtasks if sidecar else ())
    ]
    metadata: dict[str, Any] = {
        **gpu_need_metadata(short),
        "family": FAMILY,
        "task_id": folder.name,
        "title": folder.title,
        "time_limit_minutes": time_limit,
        # what the sample reserves where it runs (a Ray run places it by these)
        "resources": sidecar.resources.model_dump() if sidecar else None,
        # read by the research agent: web search only with network, filtered by this list
        "network": network,
        "blocklist": folder.blocklist.to_json(),
        KEEP_SPEC: (sidecar.keep_workspace if sidecar else KeepWorkspace()).to_metadata(),
        KEY: {
            "task_dir": str(folder.path),
            "sidecar": sidecar_used(folder),
            "workdir": DEFAULT_WORKDIR,
            "memory_mb": memory_mb,
            "install": bool(sidecar and sidecar.install),
            "idea_hint": idea_hint,
            "network": network,
            "self_reported": self_reported,
            "subtasks": public_subtasks if sidecar else None,
            "blocklist": folder.blocklist.model_dump(mode="json"),
        },
    }
    return Sample(
        id=folder.name,
        input=instructions(
            folder,
            workdir=DEFAULT_WORKDIR,
            time_limit_minutes=time_limit,
            self_reported=self_reported,
            network=network,
            idea_hint=idea_hint,
        ),
        metadata=metadata,
        sandbox=sample_sandbox(sandbox_kind, config),
    )


@solver
def researchgym_setup() -> Solver:
    """Put the task's public files in the workspace, optionally run install.sh, git init."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        info = SampleInfo.of(state.metadata)
        # the folder's content hash (seconds for gigabytes of data) is under way while
        # the agent works, not on the event loop when the sample is scored
        provenance_prefetch(state.metadata)
        with tempfile.TemporaryDirectory(prefix="labcoat-researchgym-") as tmp:
            info.folder.copy_public(Path(tmp))
            await copy_into_sandbox(Path(tmp), info.workdir)
        if info.install and (info.folder.path / INSTALL).is_file():
            result = await sandbox_env().exec(
                ["bash", INSTALL], cwd=info.workdir, timeout=INSTALL_TIMEOUT
            )
            if not result.success:
                raise LabcoatError(
                    f"{info.folder.name}: install.sh failed (exit {result.returncode}): "
                    f"{(result.stderr or result.stdout)[-2000:]}"
                )
        store().set(GIT_SETUP, await init_workspace_repo(info.workdir))
        return state

    return solve


def _family_tools(metadata: dict[str, Any]) -> list[Tool]:
    return []  # no score tool: results are only known after the agent stops


@task
@task_parameters()
def researchgym(
    target: str = "mini",
    tasks: str | list[str] | None = None,
    agent: str = "research",
    sandbox: str = "bwrap",
    idea_hint: bool = False,
) -> Task:
    """ResearchGym-style end-to-end research tasks (task folders + labcoat.yaml).

    Args:
        target: `mini` (bundled), a folder of task folders (e.g. upstream `tasks/test`)
            or one task folder.
        tasks: task ids (folder names) to run; all when omitted.
        agent: `research` (an LLM, needs --model), `oracle` or `noop`.
        sandbox: `bwrap` (default) or `docker`.
        idea_hint: add the task's idea_hint.txt to the instructions (upstream's ablation).
    """
    if sandbox == "local":
        raise LabcoatError("researchgym tasks need an isolated /home/agent: use bwrap or docker")
    root = resolve_target(target)
    nested = root / FAMILY
    ids = [tasks] if isinstance(tasks, str) else tasks
    entries = select(discover(nested if nested.is_dir() else root), ids, None)
    broken = [e for e in entries if e.problem]
    if broken and ids:
        raise LabcoatError(f"{broken[0].id}: cannot be loaded: {broken[0].problem}")
    for entry in broken:  # `labcoat list`/`eval` report them too; from Inspect, say so here
        logger.warning("researchgym task %s cannot be loaded: %s", entry.id, entry.problem)
    entries = [e for e in entries if not e.problem]
    if not entries:
        raise LabcoatError(f"{target}: no ResearchGym task folders found")
    samples = [_sample(TaskFolder(e.path), sandbox, idea_hint) for e in entries]
    return Task(
        dataset=MemoryDataset(samples, name=f"researchgym-{Path(target).name}"),
        setup=chain(require_gpus(), researchgym_setup()),
        solver=agent_solver(agent, oracle=researchgym_oracle, family_tools=_family_tools),
        scorer=researchgym_scorer(),
        metadata={"labcoat_family": FAMILY, "target": target, "agent": agent},
        # one sample's error (a task that cannot start, a broken grader) is recorded and
        # the others go on; the log still ends as an error, so a re-run retries it
        continue_on_fail=True,
        version=1,
    )

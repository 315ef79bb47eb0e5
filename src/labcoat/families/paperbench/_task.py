"""The `paperbench` Inspect task: agent phase, reproduction phase, judging.

The agent phase runs in the sample's sandbox with the paper in `/home/agent/paper` and its
repository in `/home/agent/submission` (see `_layout.py`); the network is off unless the
task allows it. The scorer then reproduces the submission in a fresh grader sandbox and
grades the rubric with the chosen judge (see `_scoring.py`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Generate, Solver, TaskState, chain, solver
from inspect_ai.tool import Tool
from inspect_ai.util import sandbox

from labcoat._errors import LabcoatError
from labcoat._util.lfs import LFS_POINTERS, require_any_content
from labcoat.agents import agent_solver
from labcoat.families._entry import TaskEntry
from labcoat.families._gpu_need import (
    gpu_need_metadata,
    grader_gpu_shortfall,
    require_gpus,
    without_gpu_needs,
)
from labcoat.families._params import TaskInputError, task_parameters
from labcoat.families._provenance import provenance_prefetch
from labcoat.families._registry import select
from labcoat.families._sandbox import sample_sandbox
from labcoat.families.paperbench._evidence import SKIP_DIRS
from labcoat.families.paperbench._judges import JUDGES
from labcoat.families.paperbench._layout import PAPER_DIR, SUBMISSION_DIR, instructions
from labcoat.families.paperbench._paper import Paper
from labcoat.families.paperbench._papers import (
    FAMILY,
    discover,
    in_split,
    load_paper,
    resolve_names,
)
from labcoat.families.paperbench._scoring import SampleSpec, paperbench_scorer
from labcoat.families.paperbench._settings import (
    DEFAULT_MEMORY_GB,
    DEFAULT_REPRODUCE_TIMEOUT_MINUTES,
    DEFAULT_REQUIREMENTS,
    DEFAULT_TIME_LIMIT_MINUTES,
    load_settings,
)
from labcoat.grading import KEEP_SPEC, copy_into_sandbox
from labcoat.sandbox import BwrapConfig, specifiers
from labcoat.suites import resolve_target

CODE_DEV_VARIANT = "Code-Dev"


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _sample(paper: Paper, options: dict[str, Any]) -> Sample:
    settings = load_settings(paper)
    time_limit = _first(
        options["time_limit_minutes"], settings.time_limit_minutes, DEFAULT_TIME_LIMIT_MINUTES
    )
    timeout = _first(
        options["reproduce_timeout_minutes"],
        settings.reproduce_timeout_minutes,
        DEFAULT_REPRODUCE_TIMEOUT_MINUTES,
    )
    requirements = tuple(
        _first(options["requirements"], settings.requirements, DEFAULT_REQUIREMENTS)
    )
    memory_mb = int(_first(options["memory_gb"], settings.memory_gb, DEFAULT_MEMORY_GB) * 1024)
    network = bool(options["network"])
    reproduce_gpus = int(_first(options["reproduce_gpus"], settings.reproduce_gpus, 0))
    blocklist = {"urls": list(paper.blacklist), "patterns": []}
    spec = SampleSpec(
        paper_dir=str(paper.path),
        judge=options["judge"],
        judge_model=options["judge_model"],
        judge_cache=options["judge_cache"],
        code_dev=options["code_dev"],
        resources_provided=options["resources_provided"],
        reproduce_timeout_minutes=float(timeout),
        requirements=requirements,
        memory_mb=memory_mb,
        reproduce_retries=options["reproduce_retries"],
        network=network,
        blocklist=blocklist,
        reproduce_gpus=reproduce_gpus,
    )
    config = BwrapConfig(
        workdir=SUBMISSION_DIR,
        network=network,
        blocklist=blocklist,
        memory_mb=memory_mb,
        environment=specifiers(*requirements),
    )
    short = grader_gpu_shortfall(reproduce_gpus, "the reproduction")
    if short:
        config = without_gpu_needs(config)
    return Sample(
        id=paper.id,
        input=instructions(
            code_dev=spec.code_dev,
            network=network,
            blacklist=paper.blacklist,
            time_limit_minutes=time_limit,
            reproduce_timeout_minutes=timeout,
            requirements=requirements,
        ),
        metadata={
            **gpu_need_metadata(short),
            "family": FAMILY,
            "task_id": paper.id,
            "title": paper.title,
            "time_limit_minutes": time_limit,
            "network": network,
            "blocklist": blocklist,
            KEEP_SPEC: settings.keep_workspace.to_metadata(),
            "paperbench": spec.to_json(),
        },
        sandbox=sample_sandbox(options["sandbox"], config),
    )


def _paper_of(state: TaskState) -> Paper:
    return load_paper(SampleSpec.of(state.metadata).paper_dir)


@solver
def paperbench_setup() -> Solver:
    """Copy what the agent may see of the paper (`Paper.agent_files()`) to /home/agent/paper."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        paper = _paper_of(state)
        # the task folder's content hash (seconds for gigabytes) is under way while the
        # agent works, not on the event loop when the sample is scored (see provenance)
        provenance_prefetch(state.metadata)
        with tempfile.TemporaryDirectory(prefix="labcoat-paper-") as tmp:
            stage = Path(tmp)
            for item in paper.agent_files():
                if item.is_dir():
                    shutil.copytree(item, stage / item.name)
                else:
                    shutil.copy2(item, stage / item.name)
            await copy_into_sandbox(stage, PAPER_DIR)
        return state

    return solve


@solver
def paperbench_oracle() -> Solver:
    """Writes the paper's reference submission into the repo, as an agent's file tool would."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        paper = _paper_of(state)
        reference = paper.reference_submission
        if reference is None:
            raise LabcoatError(f"{paper.id}: no reference_submission/ (the oracle needs one)")
        for file in sorted(p for p in reference.rglob("*") if p.is_file()):
            rel = file.relative_to(reference)
            if any(part in SKIP_DIRS for part in rel.parts):
                continue
            await sandbox().write_file(f"{SUBMISSION_DIR}/{rel.as_posix()}", file.read_bytes())
        state.output.completion = "the reference submission"
        state.completed = True
        return state

    return solve


def _no_tools(metadata: dict[str, Any]) -> list[Tool]:
    return []


def _entries(
    target: str, tasks: str | list[str] | None, split: str | None, judge: str, sandbox: str
) -> list[TaskEntry]:
    """The papers to run: `tasks` and the split (ids or folder names), all loadable."""
    if sandbox == "local":
        raise LabcoatError("paperbench needs /home/agent and separate grader sandboxes: use bwrap")
    if judge not in JUDGES:
        raise LabcoatError(f"unknown PaperBench judge '{judge}' (known: {', '.join(JUDGES)})")
    root = resolve_target(target)
    nested = root / FAMILY
    found = discover(nested if nested.is_dir() else root)
    if not found:
        raise LabcoatError(f"{target}: no PaperBench papers found")
    known = [(e.id, e.path.name) for e in found]
    ids = [tasks] if isinstance(tasks, str) else list(tasks) if tasks else None
    entries = select(found, resolve_names(ids, known, where="tasks") if ids else None, None)
    if split is not None:
        entries = in_split(found, entries, split)
    # only pointers in every paper: one line saying so, not one failure per paper
    require_any_content({e.path: e.extra.get(LFS_POINTERS) for e in entries}, f"{FAMILY} task")
    broken = [e for e in entries if e.problem]
    if broken:
        raise LabcoatError(
            f"{len(broken)} paper(s) cannot be loaded: "
            + "; ".join(f"{e.id}: {e.problem}" for e in broken)
        )
    if judge == "check":
        unchecked = [e.id for e in entries if not e.extra.get("has_sidecar")]
        if unchecked:
            raise LabcoatError(
                f"the check judge needs a labcoat.yaml of checks, and these papers have none: "
                f"{', '.join(unchecked)} (grade them with -T judge=llm, dummy or random)"
            )
    return entries


@task
@task_parameters(
    positive=("time_limit_minutes", "reproduce_timeout_minutes", "memory_gb"),
    non_negative=("reproduce_retries",),
)
def paperbench(
    target: str = "mini",
    tasks: str | list[str] | None = None,
    agent: str = "research",
    sandbox: str = "bwrap",
    split: str | None = None,
    judge: str = "check",
    code_dev: bool = False,
    judge_model: str | None = None,
    judge_cache: bool = True,
    network: bool = False,
    resources_provided: bool = False,
    time_limit_minutes: float | None = None,
    reproduce_timeout_minutes: float | None = None,
    requirements: str | list[str] | None = None,
    memory_gb: float | None = None,
    reproduce_retries: int = 2,
    reproduce_gpus: int | None = None,
) -> Task:
    """PaperBench: replicate a paper into a repo with reproduce.sh; a judge grades the rubric.

    Args:
        target: `mini` (bundled papers) or a PaperBench data folder (holding `papers/`).
        tasks: paper ids to run; all when omitted.
        agent: `research` (an LLM, needs --model), `oracle`, `noop`, or an external CLI.
        sandbox: `bwrap` (default) or `docker`.
        split: a split file of paper ids, one a line (upstream's `dev.txt`, ...); with
            `tasks`, only the papers in both.
        judge: `check` (the paper's labcoat.yaml checks), `llm` (a model in Inspect's
            `grader` role, or `judge_model`), `dummy` or `random`.
        code_dev: PaperBench Code-Dev: no reproduction, Code Development leaves only.
        judge_model: the llm judge's model (else the `grader` role, else the eval's model).
        judge_cache: keep the llm judge's answers on disk (`$LABCOAT_CACHE/judge`) and reuse
            them; false grades afresh.
        network: give the agent the network (the paper's blacklist is recorded and enforced
            where the harness can).
        resources_provided: zero the weight of Dataset and Model Acquisition leaves.
        time_limit_minutes: the agent's budget (default: the paper's, else 12 hours).
        reproduce_timeout_minutes: reproduce.sh's limit (default: the paper's, else 12 hours).
        requirements: Python packages in the sandboxes (default: the paper's, else numpy).
        memory_gb: memory of each sandbox (default: the paper's, else 4).
        reproduce_retries: re-runs of reproduce.sh after an infrastructure failure only.
        reproduce_gpus: GPUs for the reproduction (default: the paper's, else none); under
            `--ray` a reproduction needing GPUs the agent's sample lacks is its own Ray task.
    """
    try:
        entries = _entries(target, tasks, split, judge, sandbox)
    except LabcoatError as ex:
        # `inspect eval` prints a PrerequisiteError as one line, without a traceback
        raise TaskInputError(str(ex)) from None
    options = dict(
        sandbox=sandbox,
        judge=judge,
        judge_model=judge_model,
        judge_cache=judge_cache,
        code_dev=code_dev,
        network=network,
        resources_provided=resources_provided,
        time_limit_minutes=time_limit_minutes,
        reproduce_timeout_minutes=reproduce_timeout_minutes,
        requirements=[requirements] if isinstance(requirements, str) else requirements,
        memory_gb=memory_gb,
        reproduce_retries=reproduce_retries,
        reproduce_gpus=reproduce_gpus,
    )
    # every entry passed check_paper when it was discovered (its text is there)
    samples = [_sample(load_paper(e.path), options) for e in entries]
    variant = CODE_DEV_VARIANT if code_dev else None
    return Task(
        dataset=MemoryDataset(samples, name=f"paperbench-{Path(target).name}"),
        setup=chain(require_gpus(), paperbench_setup()),
        solver=agent_solver(agent, oracle=paperbench_oracle, family_tools=_no_tools),
        scorer=paperbench_scorer(),
        metadata={
            "labcoat_family": FAMILY,
            "target": target,
            "agent": agent,
            "judge": judge,
            "code_dev": code_dev,
            "labcoat_variant": variant,
        },
        model_roles={"grader": judge_model} if judge_model else None,
        # one sample's error (a task that cannot start, a broken grader) is recorded and
        # the others go on; the log still ends as an error, so a re-run retries it
        continue_on_fail=True,
        version=1,
    )

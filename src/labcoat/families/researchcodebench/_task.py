"""The `researchcodebench` Inspect task: one sample per snippet, graded by the paper's tests."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.solver import Solver, chain, generate

from labcoat._errors import LabcoatError
from labcoat._util.sync import run_sync
from labcoat.agents import agent_solver, works_in_sandbox
from labcoat.families._params import task_parameters
from labcoat.families._registry import select
from labcoat.families._sandbox import SANDBOX_KINDS
from labcoat.families.researchcodebench._availability import PaperStatus, paper_statuses
from labcoat.families.researchcodebench._discover import FAMILY, discover
from labcoat.families.researchcodebench._environment import (
    ignored_requirements,
    paper_environment,
    pset_conda,
    pset_environment,
)
from labcoat.families.researchcodebench._grading import DEFAULT_TIMEOUT, GradingPool
from labcoat.families.researchcodebench._papers import Paper, find_pset, load_papers
from labcoat.families.researchcodebench._samples import MODES, Mode, snippet_samples
from labcoat.families.researchcodebench._scorer import researchcodebench_scorer
from labcoat.families.researchcodebench._solvers import (
    agent_oracle,
    agent_setup,
    generation_oracle,
    require_available,
)
from labcoat.sandbox import PythonEnv
from labcoat.suites import resolve_target

logger = logging.getLogger(__name__)


def base_environment(pset: Path, requirements: str | list[str] | None) -> PythonEnv:
    """What every paper needs: the repository's environment.yml, the pset's own
    `requirements.txt` (a labcoat convention, next to papers.yaml), then the task's
    `requirements` (a file, or specifiers)."""
    return pset_environment(pset, requirements)[0]


def planned_environments(
    pset: Path, papers: list[Paper], requirements: str | list[str] | None
) -> tuple[dict[str, PythonEnv], dict[str, list[str]]]:
    """Each paper's environment as declared, and notes on how it was read.

    With an environment.yml (upstream), every paper gets that environment and a paper's
    own requirements.txt is not installed (as upstream); without one, the paper's own
    requirements.txt is added (the bundled pset's convention).
    """
    base, notes = pset_environment(pset, requirements)
    conda = pset_conda(pset) is not None
    environments: dict[str, PythonEnv] = {}
    paper_notes: dict[str, list[str]] = {}
    for paper in papers:
        environments[paper.id] = paper_environment(paper, base, own_requirements=not conda)
        ignored = ignored_requirements(paper) if conda else None
        paper_notes[paper.id] = [*notes, *([ignored] if ignored else [])]
    return environments, paper_notes


_statuses: dict[tuple, dict[str, PaperStatus]] = {}  # per process: oracle and noop share


async def check_environments(
    papers: list[Paper], environments: dict[str, PythonEnv], notes: dict[str, list[str]]
) -> dict[str, PaperStatus]:
    """Build every paper's environment (leaving out lines pip cannot install) and check it
    has what its tests import: one status per paper, never one error for all."""
    key = tuple(
        (str(p.folder), environments[p.id].content_digest(), tuple(notes.get(p.id, ())))
        for p in papers
    )
    if key not in _statuses:
        async with GradingPool(1) as pool:
            _statuses[key] = await paper_statuses(papers, environments, notes, pool.check)
    return {k: replace(v, notes=list(v.notes)) for k, v in _statuses[key].items()}


def _solver(agent: str, mode: Mode) -> Solver:
    if mode == "agent":
        return agent_solver(agent, oracle=agent_oracle, family_tools=lambda metadata: [])
    if agent == "research":
        return generate()  # one model call per snippet: the paper's setting
    return agent_solver(agent, oracle=generation_oracle, family_tools=lambda metadata: [])


@task
@task_parameters(positive=("timeout",))
def researchcodebench(
    target: str = "mini",
    tasks: str | list[str] | None = None,
    agent: str = "research",
    sandbox: str = "bwrap",
    mode: str = "generate",
    with_paper: bool = True,
    requirements: str | list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Task:
    """ResearchCodeBench: fill in masked snippets of papers' code; the paper's tests decide.

    Args:
        target: `mini` (bundled) or a ResearchCodeBench checkout (or its `pset/` folder).
        tasks: paper ids to run; all when omitted.
        agent: `research` (a model, needs --model), `oracle`, `noop`, `human` or an
            external CLI agent (docs/agent.md).
        sandbox: the agent's sandbox in agent mode: `bwrap` (default), `docker` or `local`.
            Grading always runs in labcoat's own bwrap sandboxes.
        mode: `generate` (default, the paper's setting: one model call per snippet with
            the paper and the masked file) or `agent` (the agent works in a sandbox
            holding the masked repository and the paper, without the tests; the mode for
            agents that work only in a sandbox: `human`, external CLIs).
        with_paper: give the paper (default) or withhold it (upstream's `--wo_paper`).
        requirements: packages every paper's tests need (a requirements file, or a
            list of specifiers), added to the pset's and the paper's `requirements.txt`.
        timeout: seconds per test run (upstream: 60).
    """
    if mode not in MODES:
        raise LabcoatError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
    if mode == "generate" and works_in_sandbox(agent):
        raise LabcoatError(
            f"the {agent} agent works in a sandbox, and generate mode (the default: one "
            "model call per snippet) has none: pass -T mode=agent (researchcodebench's agent mode)"
        )
    if sandbox not in SANDBOX_KINDS:
        raise LabcoatError(f"unknown sandbox '{sandbox}' (choose from {', '.join(SANDBOX_KINDS)})")
    if sandbox == "local" and mode == "agent":
        raise LabcoatError("agent mode would show the agent the host: use bwrap or docker")
    root = resolve_target(target)
    nested = root / FAMILY
    root = nested if nested.is_dir() else root
    ids = [tasks] if isinstance(tasks, str) else tasks
    entries = select(discover(root), ids, None)
    if not entries:
        raise LabcoatError(f"{target}: no ResearchCodeBench pset found (no papers.yaml)")
    chosen = {e.id for e in entries}
    papers = [p for p in load_papers(root) if p.id in chosen]
    pset = find_pset(root)
    assert pset is not None  # discover found papers
    environments, notes = planned_environments(pset, papers, requirements)
    statuses = run_sync(check_environments, papers, environments, notes)
    logged: set[str] = set()  # most notes concern the one environment all papers share
    for status in statuses.values():
        for note in status.notes:
            if note not in logged:
                logged.add(note)
                logger.warning("researchcodebench %s: %s", status.paper, note)
        if status.unavailable:
            logger.warning("researchcodebench %s: %s", status.paper, status.describe())

    samples = []
    for paper in papers:
        status = statuses[paper.id]
        samples += snippet_samples(
            paper,
            mode=mode,
            with_paper=with_paper,
            environment=status.env or environments[paper.id],
            timeout=timeout,
            sandbox=sandbox,
            environment_notes=tuple(status.notes),
            unavailable=status.unavailable,
        )
    return Task(
        dataset=MemoryDataset(samples, name=f"{FAMILY}-{Path(target).name}"),
        setup=chain(require_available(), agent_setup()) if mode == "agent" else None,
        solver=chain(require_available(), _solver(agent, mode)),
        scorer=researchcodebench_scorer(),
        metadata={
            "labcoat_family": FAMILY,
            "target": target,
            "agent": agent,
            "mode": mode,
            "with_paper": with_paper,
        },
        # one sample's error (a task that cannot start, a broken grader) is recorded and
        # the others go on; the log still ends as an error, so a re-run retries it
        continue_on_fail=True,
        version=1,
    )

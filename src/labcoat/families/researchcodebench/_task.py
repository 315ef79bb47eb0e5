"""The `researchcodebench` Inspect task: one sample per snippet, graded by the paper's tests."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.solver import Solver, generate

from labcoat._errors import LabcoatError
from labcoat._util.sync import run_sync
from labcoat.agents import agent_solver
from labcoat.families._params import task_parameters
from labcoat.families._registry import select
from labcoat.families._sandbox import SANDBOX_KINDS
from labcoat.families.researchcodebench._discover import FAMILY, discover
from labcoat.families.researchcodebench._environment import (
    REQUIREMENTS_FILE,
    MissingModulesError,
    paper_environment,
)
from labcoat.families.researchcodebench._grading import DEFAULT_TIMEOUT, GradingPool
from labcoat.families.researchcodebench._papers import Paper, find_pset, load_papers
from labcoat.families.researchcodebench._samples import MODES, Mode, snippet_samples
from labcoat.families.researchcodebench._scorer import researchcodebench_scorer
from labcoat.families.researchcodebench._solvers import (
    agent_oracle,
    agent_setup,
    generation_oracle,
)
from labcoat.sandbox import PythonEnv, read_requirements_file, specifiers
from labcoat.suites import resolve_target


def base_environment(pset: Path, requirements: str | list[str] | None) -> PythonEnv:
    """What every paper needs: the pset's own `requirements.txt` (a labcoat convention,
    next to papers.yaml), then the task's `requirements` (a file, or specifiers)."""
    own = pset / REQUIREMENTS_FILE
    base = read_requirements_file(own) if own.is_file() else PythonEnv()
    if requirements is None:
        return base
    if isinstance(requirements, str):
        path = Path(requirements).expanduser()
        if not path.is_file():
            raise LabcoatError(
                f"requirements={requirements!r}: no such file (give a requirements file, "
                "or a list of requirement specifiers)"
            )
        return base.plus(read_requirements_file(path))
    return base.plus(specifiers(*(str(r) for r in requirements)))


async def check_environments(papers: list[Paper], base: PythonEnv) -> None:
    """Build every paper's environment and check it has what its tests import.

    All papers are checked before one error lists every problem, so a user fixes
    them in one go rather than one model run at a time.
    """
    problems: list[str] = []
    missing = False
    async with GradingPool(1) as pool:
        for paper in papers:
            try:
                await pool.check(paper, paper_environment(paper, base))
            except MissingModulesError as exc:
                problems.append(str(exc))
                missing = True
            except LabcoatError as exc:  # a requirement that cannot be installed, ...
                problems.append(f"paper {paper.id}: {exc}")
    if problems:
        message = "\n".join(problems) + (
            "\n(leave a paper out with --task / -T tasks=...)" if len(papers) > 1 else ""
        )
        raise (MissingModulesError if missing else LabcoatError)(message)


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
        agent: `research` (a model, needs --model), `oracle` or `noop`.
        sandbox: the agent's sandbox in agent mode: `bwrap` (default), `docker` or `local`.
            Grading always runs in labcoat's own bwrap sandboxes.
        mode: `generate` (default, the paper's setting: one model call per snippet with
            the paper and the masked file) or `agent` (the agent works in a sandbox
            holding the masked repository and the paper, without the tests).
        with_paper: give the paper (default) or withhold it (upstream's `--wo_paper`).
        requirements: packages every paper's tests need (a requirements file, or a
            list of specifiers), added to the pset's and the paper's `requirements.txt`.
        timeout: seconds per test run (upstream: 60).
    """
    if mode not in MODES:
        raise LabcoatError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
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
    base = base_environment(pset, requirements)
    run_sync(check_environments, papers, base)

    samples = []
    for paper in papers:
        samples += snippet_samples(
            paper,
            mode=mode,  # type: ignore[arg-type]
            with_paper=with_paper,
            environment=paper_environment(paper, base),
            timeout=timeout,
            sandbox=sandbox,
        )
    return Task(
        dataset=MemoryDataset(samples, name=f"{FAMILY}-{Path(target).name}"),
        setup=agent_setup() if mode == "agent" else None,
        solver=_solver(agent, mode),  # type: ignore[arg-type]
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

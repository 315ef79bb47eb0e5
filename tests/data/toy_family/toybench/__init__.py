"""A toy benchmark family, outside labcoat's tree: what a new family needs.

A task is a folder with `question.txt` and `answer.txt`; the oracle answers with the
answer file, the scorer compares. Everything labcoat's shared code needs of it is in
`SPEC`; registering it is one line (`register_family("toybench", "toybench")`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from labcoat.agents import agent_solver
from labcoat.families import FamilyProvenance, FamilySpec, TaskEntry
from labcoat.families._provenance_parts import file_part
from labcoat.families._score import research_score

FAMILY = "toybench"


def discover(root: Path) -> list[TaskEntry]:
    return [
        TaskEntry(
            id=d.name,
            family=FAMILY,
            title=(d / "question.txt").read_text().strip(),
            samples=1,
            path=d,
        )
        for d in sorted(root.iterdir())
        if (d / "question.txt").is_file()
    ]


def _answer(metadata: dict[str, Any]) -> str:
    return (Path(metadata[FAMILY]["task_dir"]) / "answer.txt").read_text().strip()


@solver
def toybench_oracle() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output.completion = _answer(state.metadata)
        return state

    return solve


@scorer(metrics=[mean()])
def toybench_scorer() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        right = state.output.completion.strip() == _answer(state.metadata)
        return research_score(float(right), float(right))

    return score


@task
def toybench(
    target: str, tasks: list[str] | None = None, agent: str = "noop", sandbox: str = "local"
) -> Task:
    entries = [e for e in discover(Path(target) / FAMILY) if not tasks or e.id in tasks]
    samples = [
        Sample(
            id=e.id,
            input=e.title,
            metadata={"family": FAMILY, FAMILY: {"task_dir": str(e.path)}},
        )
        for e in entries
    ]
    return Task(
        dataset=MemoryDataset(samples, name=f"{FAMILY}-{Path(target).name}"),
        solver=agent_solver(agent, oracle=toybench_oracle, family_tools=lambda metadata: []),
        scorer=toybench_scorer(),
        metadata={"labcoat_family": FAMILY, "target": target, "agent": agent},
    )


def provenance(meta: dict[str, Any], scored: dict[str, Any]) -> FamilyProvenance:
    folder = Path(meta[FAMILY]["task_dir"])
    return FamilyProvenance(inputs={"answer": file_part(folder / "answer.txt")}, limits={})


SPEC = FamilySpec(
    name=FAMILY,
    title="Toy Bench",
    code=Path(__file__).resolve().parent,
    discover=discover,
    task=toybench,
    task_folder=lambda meta: Path(meta[FAMILY]["task_dir"]),
    provenance=provenance,
)

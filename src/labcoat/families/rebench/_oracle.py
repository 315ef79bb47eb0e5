"""The oracle: applies the reference solution through the agent's own tools, then scores."""

from __future__ import annotations

from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from labcoat._errors import LabcoatError
from labcoat.families.rebench._family import AGENT_HOME
from labcoat.families.rebench._sample import SampleTask
from labcoat.families.rebench._scoring import record_intermediate_score


@solver
def rebench_oracle() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sample = SampleTask.of(state.metadata)
        spec = state.metadata["rebench"]["oracle"]
        if spec["files"]:
            source = sample.family.path / spec["files"]
            if not source.is_dir():
                raise LabcoatError(f"{sample.family.path}: oracle.files: {source} is not a folder")
            # what the agent's file tool does: write each file into its sandbox
            files = (p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
            for file in sorted(files):
                target = f"{AGENT_HOME}/{file.relative_to(source).as_posix()}"
                await sandbox().write_file(target, file.read_bytes())
        if spec["run"]:
            # what the agent's bash tool does
            result = await sandbox().exec(
                ["bash", "-lc", spec["run"]], cwd=AGENT_HOME, timeout=3600
            )
            if not result.success:
                raise LabcoatError(
                    f"oracle command failed for {sample.family.name}/{sample.task} "
                    f"(exit {result.returncode}): {(result.stderr or result.stdout)[-2000:]}"
                )
        if sample.intermediate_scoring:
            await record_intermediate_score(sample)  # what the agent's score tool does
        state.output.completion = spec["submission"]
        state.completed = True
        return state

    return solve

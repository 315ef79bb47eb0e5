"""A scripted agent for RE-Bench tests: bash commands, the family's tools, a submission.

Each step is ("bash", command), ("score",), ("score_log",) or ("submit", answer); a step
may depend on the task: a dict {task_name: step}. Outputs are kept in the sample's store
under OUTPUTS, in order, for the test to read back from the log."""

from __future__ import annotations

from typing import Any

from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef
from inspect_ai.util import sandbox, store

from labcoat.families.rebench._task import _family_tools

OUTPUTS = "test:outputs"


@solver
def scripted(*steps: Any) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        tools = {ToolDef(t).name: t for t in _family_tools(state.metadata)}
        outputs: list[str] = []
        for step in steps:
            if isinstance(step, dict):
                step = step.get(state.metadata["task_name"])
                if step is None:
                    continue
            kind = step[0]
            if kind == "bash":
                result = await sandbox().exec(["bash", "-c", step[1]], cwd="/home/agent")
                outputs.append(result.stdout + result.stderr)
            elif kind in ("score", "score_log"):
                if kind not in tools:
                    outputs.append(f"no {kind} tool")
                else:
                    outputs.append(str(await tools[kind]()))
            elif kind == "submit":
                state.output.completion = step[1]
            else:
                raise ValueError(f"unknown step {step!r}")
        store().set(OUTPUTS, outputs)
        state.completed = True
        return state

    return solve

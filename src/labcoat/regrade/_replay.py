"""The solver a regrade runs in place of the agent: the kept sample, put back.

It follows the family's own setup (and a noop agent), so the sandbox is what a fresh run
of the task would grade; it then puts back the kept workspace, the submission and the
store entries the scorer reads, and the family's scorer runs as it always does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import store

from labcoat._errors import LabcoatError
from labcoat.grading import restore_workspace
from labcoat.regrade._find import ORIGINAL

REPLAY_NOTES = "labcoat:regrade:replay"
"""Store key: what the replay could not put back (files kept by reference)."""


def plan_key(sample_id: str | int, epoch: int) -> str:
    return f"{sample_id}#{epoch}"


@solver
def replay(plan_file: str) -> Solver:
    """`plan_file`: JSON, `{"<sample id>#<epoch>": {"manifest": path, "original": {...}}}`."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        plan: dict[str, Any] = json.loads(Path(plan_file).read_text(encoding="utf-8"))
        entry = plan.get(plan_key(state.sample_id, state.epoch))
        if entry is None:
            raise LabcoatError(
                f"not regradable: no kept workspace for {state.sample_id} epoch {state.epoch}"
            )
        store().set(ORIGINAL, entry["original"])
        notes = await restore_workspace(state, Path(entry["manifest"]))
        store().set(REPLAY_NOTES, notes)
        transcript().info({"replayed": entry, **notes}, source="labcoat regrade")
        state.completed = True
        return state

    return solve


@solver
def then_replay(agent: Solver, plan_file: str) -> Solver:
    """`agent` (the task's own solver, with a noop agent), then `replay`, even though the
    noop marks the sample completed (which would end a `chain`)."""
    put_back = replay(plan_file)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state = await agent(state, generate)
        return await put_back(state, generate)

    return solve

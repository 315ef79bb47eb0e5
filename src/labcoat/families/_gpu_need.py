"""Samples that need GPUs this machine cannot lend: unavailable, with the reason, before
anything is built for them (their environment would hold torch, gigabytes from PyPI).

Every family words the reason with `sample_gpu_shortfall` (a METR manifest also names a
GPU model). RE-Bench families mark such a sample with their own `unavailable` metadata
(`rebench/_task.py`, with the family's other reasons); ResearchGym tasks and PaperBench
reproductions use the rest of this module: the task function marks the sample
(`gpu_need_metadata`) and gives it an empty sandbox (`without_gpu_needs`), and
`require_gpus` errors it as unavailable before the agent starts.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.solver import Generate, Solver, TaskState, solver

from labcoat._unavailable import unavailable
from labcoat.grading import grader_placement
from labcoat.sandbox import BwrapConfig, PythonEnv, gpu_shortfall

GPU_UNAVAILABLE = "labcoat_gpu_unavailable"
"""Sample metadata: why this machine cannot give the sample its GPUs (absent: it can)."""


def sample_gpu_shortfall(gpus: int, model: str | None = None) -> str | None:
    """Why this machine cannot lend a sample's own sandbox `gpus` GPUs (of `model`; None:
    it can). Under Ray the sample is placed on a node that has them, and its task built
    there."""
    shortfall = gpu_shortfall(gpus, model)
    return f"the task {shortfall}" if shortfall else None


def grader_gpu_shortfall(gpus: int, what: str) -> str | None:
    """Why `what` (a grader step needing `gpus`) cannot have them (None: it can). Under
    Ray a step needing GPUs its sample does not hold is placed on a node that has them."""
    if grader_placement(gpus) is not None:
        return None
    shortfall = gpu_shortfall(gpus)
    return f"{what} {shortfall}" if shortfall else None


def without_gpu_needs(config: BwrapConfig) -> BwrapConfig:
    """The sandbox of a sample that cannot run here: nothing built, no GPUs asked for."""
    return config.model_copy(update={"environment": PythonEnv(), "image": None, "gpus": 0})


def gpu_need_metadata(reason: str | None) -> dict[str, Any]:
    return {GPU_UNAVAILABLE: reason} if reason else {}


@solver
def require_gpus() -> Solver:
    """Errors a sample marked `GPU_UNAVAILABLE` before anything runs: the tables then list
    its task as `unavailable: <reason>`."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        reason = (state.metadata or {}).get(GPU_UNAVAILABLE)
        if reason:
            raise unavailable(reason)
        return state

    return solve

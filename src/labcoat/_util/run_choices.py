"""The run's choices that code deep below the run reads: the task interpreter
(`--python`), the GPU-model policy (`--any-gpu-model`) and the web search provider
(`--search-provider`).

They are part of the run's configuration (`labcoat._run._config.RunConfig`), built once
by the CLI. The code that acts on them (a task environment's build, a family's GPU check,
the research agent's tools) runs under Inspect's task and solver boundary, which passes
no argument of ours down to it; so the runner sets them ONCE, in a context variable, for
the whole run (`using`), on the launcher and on each Ray worker from the run's config.
Context variables follow Inspect's asyncio tasks and `anyio.to_thread` calls, and, unlike
`os.environ`, never leak to another run in the process nor depend on what a Ray node's
environment holds.

Outside a run (`labcoat list`, tests calling a family directly) the environment
variables below give the defaults: the user-facing way to set them, read into the choices,
never a channel between parts of a run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

TASK_PYTHON_ENV = "LABCOAT_TASK_PYTHON"
"""Default of `--python`: an interpreter whose packages every task environment sees."""
ANY_GPU_MODEL_ENV = "LABCOAT_ANY_GPU_MODEL"
"""Default of `--any-gpu-model`: `1` skips the check of a task's GPU model."""
SEARCH_PROVIDER_ENV = "LABCOAT_SEARCH_PROVIDER"
"""Default of `--search-provider`: `searxng:URL` or `tavily`."""


@dataclass(frozen=True)
class RunChoices:
    """What a run chose for the code that builds and runs its samples."""

    task_python: str | None = None
    """An interpreter or venv whose site-packages every task environment sees."""
    any_gpu_model: bool = False
    """Run a task that asks for a GPU model this machine lacks on the GPUs it has."""
    search_provider: str | None = None
    """The research agent's web search: `searxng:URL` or `tavily` (None: no web search)."""

    @classmethod
    def from_env(cls) -> RunChoices:
        """The defaults the user set in the environment."""
        return cls(
            task_python=os.environ.get(TASK_PYTHON_ENV, "").strip() or None,
            any_gpu_model=os.environ.get(ANY_GPU_MODEL_ENV) == "1",
            search_provider=os.environ.get(SEARCH_PROVIDER_ENV, "").strip() or None,
        )


_CURRENT: ContextVar[RunChoices | None] = ContextVar("labcoat_run_choices", default=None)


def current_choices() -> RunChoices:
    """The choices of the run under way, else the environment's defaults."""
    return _CURRENT.get() or RunChoices.from_env()


@contextlib.contextmanager
def using(choices: RunChoices) -> Iterator[RunChoices]:
    """Make `choices` the run's for everything this context does (and starts)."""
    token = _CURRENT.set(choices)
    try:
        yield choices
    finally:
        _CURRENT.reset(token)

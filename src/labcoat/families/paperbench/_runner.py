"""The check judge's `CommandRunner` for agents' code: commands run in grader sandboxes.

One sandbox per view (the submission as the agent left it, the executed submission), started
on first use and closed with the context. Each view is bound read-only at the path the agent
used, so a check can neither change what later checks read nor the judges' copy. Commands run
as the agent user where the sandbox has a separate root: they execute the submission's code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio

from labcoat.families.paperbench._check_judge import (
    MAX_OUTPUT_CHARS,
    CommandRequest,
    CommandResult,
    CommandRunner,
)
from labcoat.families.paperbench._layout import SUBMISSION_DIR
from labcoat.families.paperbench._reproduce import SessionFactory
from labcoat.grading import grader_session
from labcoat.sandbox import BwrapSession, specifiers

CHECK_ENV = {"PYTHONDONTWRITEBYTECODE": "1"}


@asynccontextmanager
async def sandbox_command_runner(
    roots: Mapping[str, Path],
    *,
    requirements: tuple[str, ...] = (),
    memory_mb: int | None = 4096,
    env: Mapping[str, str] | None = None,
    session_factory: SessionFactory = grader_session,
) -> AsyncIterator[CommandRunner]:
    """A runner for `roots[request.where]`; sandboxes close when the context exits."""
    async with AsyncExitStack() as stack:
        sessions: dict[str, BwrapSession] = {}
        lock = anyio.Lock()

        async def session_for(where: str) -> BwrapSession:
            async with lock:  # concurrent checks share one sandbox per view
                if where not in sessions:
                    sessions[where] = await stack.enter_async_context(
                        session_factory(
                            protected=None,
                            workspace=roots[where],
                            workspace_target=SUBMISSION_DIR,
                            workspace_writable=False,
                            environment=specifiers(*requirements),
                            memory_mb=memory_mb,
                            workdir=SUBMISSION_DIR,
                        )
                    )
                return sessions[where]

        async def run(request: CommandRequest) -> CommandResult:
            session = await session_for(request.where)
            user = "agent" if "root" in session.users else None
            try:
                result = await session.exec(
                    ["bash", "-c", request.command],
                    cwd=SUBMISSION_DIR,
                    user=user,
                    env={**CHECK_ENV, **(env or {})},
                    timeout=request.timeout,
                )
            except TimeoutError:
                return CommandResult(-9, timed_out=True)
            return CommandResult(
                result.returncode,
                result.stdout[-MAX_OUTPUT_CHARS:],
                result.stderr[-MAX_OUTPUT_CHARS:],
            )

        yield run

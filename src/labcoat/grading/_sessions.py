"""Fresh protected sandboxes for setup and grading."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import anyio

from labcoat.sandbox import (
    Bind,
    BwrapConfig,
    BwrapSession,
    ImageSpec,
    PythonEnv,
    has_separate_root,
    machine,
    thread_environment,
)


def exclusive_machine() -> AbstractAsyncContextManager[None]:
    """Hold while a timing-sensitive score is measured: no other sandbox command starts."""
    return machine.exclusive()


@asynccontextmanager
async def grader_session(
    *,
    protected: Path | None,
    workspace: Path | None,
    workspace_target: str = "/home/agent",
    workspace_writable: bool = False,
    environment: PythonEnv | None = None,
    memory_mb: int | None = 4096,
    cpus: float | None = None,
    workdir: str = "/root",
    network: bool = False,
    blocklist: dict[str, tuple[str, ...]] | None = None,
    gpus: bool = False,
    image: ImageSpec | None = None,
    binds: tuple[Bind, ...] = (),
    env: dict[str, str] | None = None,
) -> AsyncIterator[BwrapSession]:
    """A bwrap sandbox with `protected` copied in as /root and the workspace bound in.

    As root, /root is root-only and the grader can run agent code as the agent user;
    without root (one user), agent code run by a grader could read /root: the log notes
    the mode so reports can tell. A run that needs what the agent had (a reproduction)
    may ask for the same network (through the filtering proxy) and GPUs. `image` (a task
    image) replaces `environment`; `binds` add host paths (a sample's own state); `env`
    sets variables of every command.
    """
    if workspace is not None:
        binds = (
            Bind(source=str(workspace), target=workspace_target, writable=workspace_writable),
            *binds,
        )
    config = BwrapConfig(
        workdir=workdir,
        root_source=str(protected) if protected is not None else None,
        environment=environment or PythonEnv(),
        image=image,
        memory_mb=memory_mb,
        # thread counts only, no cgroup quota: a quota's throttling would add up to a
        # period's delay to whatever a grader times
        env={**(env or {}), **(thread_environment(cpus) if cpus is not None else {})},
        binds=binds,
        default_user="root" if has_separate_root() else "agent",
        network=network,
        blocklist=blocklist,
        gpus=gpus,
    )
    session = await BwrapSession.create(config)
    try:
        yield session
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()

"""Fresh protected sandboxes for setup and grading."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path

import anyio

from labcoat.sandbox import (
    Bind,
    BwrapConfig,
    BwrapSession,
    GpuLease,
    ImageSpec,
    PythonEnv,
    current_bwrap_session,
    has_separate_root,
    machine,
    record_grader_gpus,
    thread_environment,
)


@asynccontextmanager
async def exclusive_machine() -> AsyncIterator[None]:
    """Hold while a timing-sensitive score is measured: no other sandbox command starts,
    and the current sample's own commands (background jobs included) are paused, so
    none loads the machine while the yardsticks are timed. (The agent's sandbox of
    another provider than bwrap is not paused.)"""
    async with machine.exclusive():
        session = _sample_session()
        async with session.paused() if session is not None else nullcontext():
            yield


def _sample_session() -> BwrapSession | None:
    """The current sample's own bwrap sandbox, or None (another provider, or not inside a
    sample: a stand-alone operation)."""
    try:
        return current_bwrap_session()
    except ProcessLookupError:
        return None


def _sample_gpus(gpus: int) -> GpuLease | None:
    """The GPUs the current sample's own sandbox holds (a grader shares them), if any."""
    if gpus <= 0:
        return None
    session = _sample_session()
    return session.gpu_lease if session is not None else None


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
    blocklist: Mapping[str, Sequence[str]] | None = None,
    gpus: int = 0,
    image: ImageSpec | None = None,
    binds: tuple[Bind, ...] = (),
    env: dict[str, str] | None = None,
) -> AsyncIterator[BwrapSession]:
    """A bwrap sandbox with `protected` copied in as /root and the workspace bound in.

    As root, /root is root-only and the grader can run agent code as the agent user;
    without root (one user), agent code run by a grader could read /root: the log notes
    the mode so reports can tell. A run that needs what the agent had (a reproduction)
    may ask for the same network (through the filtering proxy) and GPUs (the sample's own
    when it holds enough, else the machine pool's). `image` (a task
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
        agent_jail=True,  # one user: the agent's code a grader runs goes into a nested sandbox
        disk_fuse=False,  # FUSE's slower writes would fall inside what graders time
        network=network,
        blocklist=blocklist,
        gpus=gpus,
    )
    session = await BwrapSession.create(config, share_gpus=_sample_gpus(gpus))
    try:
        yield session
    finally:
        record_grader_gpus(session)
        with anyio.CancelScope(shield=True):
            await session.close()

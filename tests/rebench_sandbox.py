"""A bundled RE-Bench family started in a real agent sandbox, as an eval would start it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from labcoat.families.rebench import TaskFamilyDir, run_operation
from labcoat.sandbox import BwrapConfig, BwrapSession


@asynccontextmanager
async def started_family(
    family: TaskFamilyDir, task: str = "main"
) -> AsyncIterator[tuple[BwrapSession, Path]]:
    """(the agent's sandbox, its /home/agent on the host) after the family's start()."""
    session = await BwrapSession.create(
        BwrapConfig(workdir="/home/agent", environment=family.environment)
    )
    try:
        home = session.host_path("/home/agent")
        assert home is not None
        await run_operation(family, "start", task, home=home, home_writable=True)
        yield session, home
    finally:
        await session.close()

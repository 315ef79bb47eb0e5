from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable

import pytest
from isolation_modes import MODES

from labcoat.sandbox import BwrapConfig, BwrapSession

if shutil.which("bwrap") is None:
    pytest.fail(
        "bubblewrap is missing: install it (apt-get install bubblewrap); the sandbox tests "
        "cannot run without it",
        pytrace=False,
    )

# Each test runs in every mode this user can: root (separate root and agent users),
# rootless with separate users (a subordinate id range), one user.


@pytest.fixture(params=MODES)
def sandbox_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LABCOAT_SANDBOX_MODE", str(request.param))
    return str(request.param)


@pytest.fixture
async def make_session(sandbox_mode: str) -> AsyncIterator[Callable[..., object]]:
    """Create sessions that are closed at the end of the test, whatever happens."""
    sessions: list[BwrapSession] = []

    async def create(**config: object) -> BwrapSession:
        session = await BwrapSession.create(BwrapConfig(**config))  # type: ignore[arg-type]
        sessions.append(session)
        return session

    yield create
    for session in sessions:
        await session.close()

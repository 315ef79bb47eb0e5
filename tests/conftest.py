"""Shared fixtures: async tests run on asyncio through anyio's pytest plugin."""

from __future__ import annotations

import inspect
import os
import tempfile
from typing import Any

import pytest

# fixtures of their own modules, for every test folder
pytest_plugins = ["fake_gpus"]

# Test workers (pytest-xdist) keep their machine locks apart: otherwise every timed score
# of one worker waits up to 2 minutes for the other's long commands, which nearly doubles
# the suite's time on 2 cores. tests/sandbox/test_machine_lock.py tests the shared lock
# across processes; what a busy neighbour does to timings is in tests/integrity/cheats.py.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and "LABCOAT_MACHINE_LOCK_DIR" not in os.environ:
    os.environ["LABCOAT_MACHINE_LOCK_DIR"] = os.path.join(
        tempfile.gettempdir(), f"labcoat-test-machine-locks-{os.getuid()}-{_WORKER}"
    )


# As root the tests exercise the one-user mode through its stand-in (the agent is host uid
# 0 with its capabilities dropped), which labcoat refuses to anyone who has not asked for
# it: only the tests' own code runs there. The real one-user mode is tested as an ordinary
# user (scripts/test-as-users.sh).
os.environ.setdefault("LABCOAT_UNSAFE_ROOT_ONE_USER", "1")


def pytest_configure(config: pytest.Config) -> None:
    """LABCOAT_EXPECT_MODE (scripts/test-as-users.sh sets it): a run whose sandboxes would
    have another isolation mode than expected stops at once, instead of testing that one."""
    expected = os.environ.get("LABCOAT_EXPECT_MODE")
    if not expected:
        return
    from labcoat.sandbox import isolation
    from labcoat.sandbox._userns import mapping_problem

    if str(isolation()) != expected:
        pytest.exit(
            f"LABCOAT_EXPECT_MODE={expected}, but sandboxes run as {isolation()} here "
            f"({mapping_problem() or 'a subordinate range is usable'})",
            returncode=3,
        )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> None:
    """Every `async def` test runs under anyio without each file having to say so."""
    if collector.funcnamefilter(name) and inspect.iscoroutinefunction(obj):
        pytest.mark.anyio(obj)

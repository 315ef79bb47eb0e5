"""Shared fixtures: async tests run on asyncio through anyio's pytest plugin."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

# fixtures of their own modules, for every test folder
pytest_plugins = ["fake_gpus"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> None:
    """Every `async def` test runs under anyio without each file having to say so."""
    if collector.funcnamefilter(name) and inspect.iscoroutinefunction(obj):
        pytest.mark.anyio(obj)

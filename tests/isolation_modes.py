"""The sandbox modes this test run can exercise, and a mark for tests that need a root
apart from the agent (as root, or rootless with a subordinate id range)."""

from __future__ import annotations

import os

import pytest

from labcoat.sandbox import has_separate_root
from labcoat.sandbox._layout import UNSAFE_STANDIN_ENV
from labcoat.sandbox._userns import mapping_problem

ROOT = os.geteuid() == 0
SEPARATE_USERS = has_separate_root()
STANDIN = os.environ.get(UNSAFE_STANDIN_ENV) == "1"
"""Root may run the one-user mode's stand-in (tests/conftest.py allows it unless the
caller set the variable: a container's root run sets 0, for root's mode only)."""
WHY_NO_STANDIN = (
    f"as root the one-user mode is only the tests' stand-in, and {UNSAFE_STANDIN_ENV}="
    f"{os.environ.get(UNSAFE_STANDIN_ENV)} here (root's mode only)"
)
needs_one_user = pytest.mark.skipif(ROOT and not STANDIN, reason=WHY_NO_STANDIN)
"""For a test that runs the one-user mode (as root: its stand-in)."""

MODES: list[object] = (
    ["root", pytest.param("one-user", marks=needs_one_user)] if ROOT else ["one-user"]
)
"""Every mode this user can run sandboxes in (root can exercise one user too)."""
if not ROOT and mapping_problem() is None:
    MODES.insert(0, "separate-users")

WHY_ONE_USER = (
    f"needs a root apart from the agent: run as root, or give this user a subordinate id "
    f"range ({mapping_problem()})"
)

needs_separate_users = pytest.mark.skipif(not SEPARATE_USERS, reason=WHY_ONE_USER)

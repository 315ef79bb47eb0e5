"""The sandbox modes this test run can exercise, and a mark for tests that need a root
apart from the agent (as root, or rootless with a subordinate id range)."""

from __future__ import annotations

import os

import pytest

from labcoat.sandbox import has_separate_root
from labcoat.sandbox._userns import mapping_problem

ROOT = os.geteuid() == 0
SEPARATE_USERS = has_separate_root()

MODES = ["root", "one-user"] if ROOT else ["one-user"]
"""Every mode this user can run sandboxes in (root can exercise one user too)."""
if not ROOT and mapping_problem() is None:
    MODES.insert(0, "separate-users")

WHY_ONE_USER = (
    f"needs a root apart from the agent: run as root, or give this user a subordinate id "
    f"range ({mapping_problem()})"
)

needs_separate_users = pytest.mark.skipif(not SEPARATE_USERS, reason=WHY_ONE_USER)

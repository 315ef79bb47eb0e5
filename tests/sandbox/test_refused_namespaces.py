"""Where user namespaces are refused, a run stops before it starts: one line naming the
cause and the remedy, exit 2, nothing written.

The refusal is made for real, and for this test alone: `user.max_user_namespaces` is a
limit of each user namespace, so one of our own with it at 0 refuses every namespace
created inside it, as the sysctl does for a whole machine. Inside it this test is that
namespace's root, so it asks for the one-user mode, which (as for any ordinary user)
needs a user namespace of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labcoat.sandbox._layout import UNSAFE_STANDIN_ENV

REFUSE = "echo 0 > /proc/sys/user/max_user_namespaces"


def _why_it_cannot_be_refused() -> str | None:
    """Why this test cannot make the refusal here (None: it can)."""
    if shutil.which("unshare") is None:
        return "util-linux unshare"
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c", REFUSE],
        capture_output=True,
        text=True,
    )
    # a container without systempaths=unconfined mounts /proc/sys read-only
    return None if done.returncode == 0 else f"`{REFUSE}` fails here: {done.stderr.strip()}"


WHY_NOT = _why_it_cannot_be_refused()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))


def _refused(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = f'{REFUSE} && exec "$@"'
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c", script, "sh",
         sys.executable, "-m", "labcoat", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        # root only of its own namespace (the caller outside it): the one-user mode's
        # agent is not host root, whatever the caller's environment asks of root
        env={**os.environ, "LABCOAT_SANDBOX_MODE": "one-user", UNSAFE_STANDIN_ENV: "1"},
    )  # fmt: skip


def test_validate_stops_in_one_line_naming_the_sysctl(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    done = _refused(["validate", "mini", "--log-dir", str(logs)], tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("labcoat: error: user namespaces are refused here")
    assert "user.max_user_namespaces is 0" in line
    assert "sysctl -w user.max_user_namespaces=" in line and "--sandbox docker" in line
    assert "Traceback" not in done.stderr + done.stdout
    assert not logs.exists()  # nothing half-started


def test_check_says_so_and_fails(tmp_path: Path) -> None:
    done = _refused(["check", "mini", "--no-build"], tmp_path)
    assert done.returncode == 2
    assert "user namespaces are refused here" in done.stdout
    assert "isolation rootless-one-user" in done.stderr

"""What a run killed with -9 leaves behind is swept when the next sandbox starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from labcoat.sandbox import BwrapConfig, BwrapSession, _session_cleanup
from labcoat.sandbox._layout import KEPT_FILE, LEGACY_AGE_S, OWNER_FILE, sweep_left_behind
from labcoat.sandbox._limits import existing_cgroup

HOLD = textwrap.dedent(
    """
    import anyio
    from labcoat.sandbox import BwrapConfig, BwrapSession

    async def main():
        session = await BwrapSession.create(BwrapConfig(memory_mb=256))
        print(session.dirs.root.name, flush=True)
        await anyio.sleep(600)

    anyio.run(main)
    """
)


@pytest.fixture
def own_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "sandboxes"
    monkeypatch.setenv("LABCOAT_SANDBOX_DIR", str(root))
    monkeypatch.setattr(_session_cleanup, "_swept", False)
    return root


def _killed_run(root: Path) -> str:
    """Start a sandbox in another process, then kill that process with SIGKILL."""
    env = {**os.environ, "LABCOAT_SANDBOX_DIR": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    name = proc.stdout.readline().strip()
    assert name.startswith("sample-"), "the sandbox did not start"
    proc.kill()
    proc.wait()
    return name


async def test_a_killed_runs_folder_and_cgroup_are_swept_at_the_next_start(
    own_root: Path, sandbox_mode: str
) -> None:
    name = _killed_run(own_root)
    assert (own_root / name).is_dir()  # left behind: nobody cleaned up
    had_cgroup = existing_cgroup(f"labcoat-{name}") is not None
    session = await BwrapSession.create(BwrapConfig())
    try:
        assert not (own_root / name).exists()
        assert existing_cgroup(f"labcoat-{name}") is None
        if not had_cgroup:
            pytest.skip("this host gave the sandbox no cgroup; the folder was swept")
    finally:
        await session.close()


async def test_live_and_kept_sandboxes_are_left_alone(own_root: Path, sandbox_mode: str) -> None:
    live = await BwrapSession.create(BwrapConfig())
    try:
        kept = own_root / "sample-kept"
        kept.mkdir()
        (kept / KEPT_FILE).touch()
        (kept / OWNER_FILE).touch()  # no process holds it: would be swept but for .kept
        swept = sweep_left_behind(own_root, lambda name: None, lambda name: None)
        assert swept == []
        assert live.dirs.root.is_dir() and kept.is_dir()
    finally:
        await live.close()


def test_folders_of_older_labcoats_wait_until_old_and_idle(tmp_path: Path) -> None:
    recent, old, busy = (tmp_path / f"sample-{n}" for n in ("recent", "old", "busy"))
    for folder in (recent, old, busy):
        folder.mkdir()  # no owner file: made by a labcoat before owner files
    stale = time.time() - LEGACY_AGE_S - 60
    os.utime(old, (stale, stale))
    os.utime(busy, (stale, stale))
    removed: list[str] = []
    swept = sweep_left_behind(
        tmp_path,
        lambda cgroup: cgroup == "labcoat-sample-busy",  # processes still run there
        removed.append,
    )
    assert swept == ["sample-old"] and removed == ["labcoat-sample-old"]
    assert recent.is_dir() and busy.is_dir() and not old.exists()

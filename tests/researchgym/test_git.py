"""Capturing the workspace's history after the agent stops (in a bwrap sandbox)."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

import labcoat.families.researchgym._git as git_module
from labcoat.families.researchgym._git import LARGE_FILE_MB, capture_history

pytestmark = pytest.mark.anyio
WORKDIR = "/home/agent/work"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


async def test_history_of_a_workspace_without_repository(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.md").write_text("what I tried\n")
    with open(workspace / "checkpoint.bin", "wb") as big:
        big.truncate((LARGE_FILE_MB + 1) * 1024 * 1024)
    history = await capture_history(workspace, WORKDIR)
    assert history["captured"] and history["commits"] == 1
    assert "no repository" in history["note"]
    bundle = tmp_path / "w.bundle"
    bundle.write_bytes(base64.b64decode(history["bundle_base64"]))
    git(tmp_path, "clone", "-q", str(bundle), "clone")
    files = git(tmp_path / "clone", "ls-tree", "-r", "--name-only", "HEAD").split()
    assert files == ["notes.md"]  # the large file is left out of the history
    assert not (workspace / ".git").exists()  # the workspace is read, never written


async def test_agent_commits_are_kept_and_hooks_do_not_run(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    git(workspace, "init", "-q")
    (workspace / "a.py").write_text("x = 1\n")
    git(workspace, "add", "-A")
    git(workspace, "-c", "user.name=agent", "-c", "user.email=a@b", "commit", "-qm", "first try")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch hook-ran\nexit 1\n")
    hook.chmod(0o755)
    (workspace / "a.py").write_text("x = 2\n")  # left uncommitted
    history = await capture_history(workspace, WORKDIR)
    assert history["commits"] == 2
    assert "first try" in history["log"] and "final state" in history["log"]
    assert "a.py" in history["diff_stat"]
    assert not (workspace / "hook-ran").exists()


HANG = "sleep 3600"


def hostile_repository(workspace: Path) -> None:
    """A repository whose config, attributes and hooks name a program wherever git
    could run one during a capture (each would hang it for an hour)."""
    workspace.mkdir()
    git(workspace, "init", "-q")
    (workspace / "a.py").write_text("x = 1\n")
    git(workspace, "add", "-A")
    git(workspace, "-c", "user.name=agent", "-c", "user.email=a@b", "commit", "-qm", "first")
    config = {
        "filter.x.clean": HANG,
        "filter.x.smudge": HANG,
        "filter.x.process": HANG,
        "filter.x.required": "true",
        "diff.x.textconv": HANG,
        "diff.x.command": HANG,
        "diff.external": HANG,
        "core.fsmonitor": HANG,
        "core.hooksPath": "hooks",
        "core.pager": HANG,
        "log.showSignature": "true",
        "gpg.program": HANG,
        "commit.gpgSign": "true",
        "include.path": "more.config",
        "core.worktree": "/",
        "core.attributesFile": "attrs",
    }
    for key, value in config.items():
        git(workspace, "config", key, value)
    (workspace / ".git" / "more.config").write_text(f'[filter "y"]\n\tclean = {HANG}\n')
    (workspace / "attrs").write_text("* filter=y\n")
    (workspace / ".gitattributes").write_text(
        "*.py filter=x diff=x\n[attr]evil filter=x\nb.txt evil\n"
    )
    (workspace / "hooks").mkdir()
    for hook in ("pre-commit", "commit-msg", "post-commit"):
        for folder in (workspace / "hooks", workspace / ".git" / "hooks"):
            (folder / hook).write_text(f"#!/bin/sh\n{HANG}\n")
            (folder / hook).chmod(0o755)
    nested = workspace / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    git(nested, "config", "filter.x.clean", HANG)
    (nested / ".gitattributes").write_text("* filter=x\n")
    (nested / "n.txt").write_text("n\n")
    (workspace / "a.py").write_text("x = 2\n")  # left uncommitted
    (workspace / "b.txt").write_text("b\n")


async def test_nothing_the_repository_names_runs_and_its_changes_are_recorded(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "work"
    hostile_repository(workspace)
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    history = await capture_history(workspace, WORKDIR, timeout=60)
    assert history["captured"], history
    assert history["commits"] == 2
    assert "first" in history["log"] and "final state" in history["log"]
    assert "a.py" in history["diff_stat"] and "b.txt" in history["diff_stat"]
    # recorded as they are, unfiltered
    bundle = tmp_path / "w.bundle"
    bundle.write_bytes(base64.b64decode(history["bundle_base64"]))
    git(tmp_path, "clone", "-q", "--no-checkout", str(bundle), "clone")
    assert git(tmp_path / "clone", "show", "HEAD:a.py") == "x = 2\n"
    assert sorted(p.relative_to(workspace) for p in workspace.rglob("*")) == before


async def test_a_capture_over_its_time_gives_no_history_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.md").write_text("x\n")
    script = git_module._capture_script
    monkeypatch.setattr(git_module, "_capture_script", lambda w: "sleep 30\n" + script(w))
    history = await capture_history(workspace, WORKDIR, timeout=2)
    assert history == {"captured": False, "note": "no history: the capture took over 2 s"}

"""The reproduction phase in real bwrap sandboxes, and the check judge's sandboxed runner."""

from __future__ import annotations

import os
import shutil
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from inspect_ai.util import SandboxUnavailableError

from labcoat.families.paperbench import (
    CommandRequest,
    ReproductionError,
    ReproductionSettings,
    diff,
    manifest,
    reproduce,
    sandbox_command_runner,
)
from labcoat.grading import grader_session
from labcoat.sandbox import has_separate_root

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap"),
]


def make_repo(root: Path, script: str, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "reproduce.sh").write_text(script)
    for name, text in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def settings(timeout_s: float = 60, **kw) -> ReproductionSettings:
    return ReproductionSettings(timeout_s=timeout_s, memory_mb=1024, **kw)


async def test_exit_code_log_and_the_files_it_wrote(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        "set -e\necho running in $PWD as $(id -un)\nmkdir -p results\n"
        "echo 1 > results/out.txt\necho changed > notes.md\nrm old.txt\nexit 3\n",
        {"notes.md": "before\n", "old.txt": "x\n", "keep.py": "print(1)\n"},
    )
    async with reproduce(repo, settings()) as (record, executed):
        assert record.exit_code == 3 and not record.timed_out and record.script_found
        assert record.changes.created == ("results/out.txt",)
        assert record.changes.changed == ("notes.md",)
        assert record.changes.deleted == ("old.txt",)
        assert "running in /home/agent/submission" in record.log_tail
        assert (executed / "reproduce.log").is_file()  # in the executed copy, as upstream
        assert record.duration_s is not None and record.started_at is not None
        assert record.infra_failures == ()
        # judges get the core's view, with the measured outputs
        rep = record.reproduction()
        assert rep.changed_files == ("notes.md", "results/out.txt") and rep.exit_code == 3
        data = record.to_json()
        assert data["files_created"] == {"count": 1, "paths": ["results/out.txt"]}
        assert data["attempts"] == 1
    # the agent's repository itself is never touched; the executed copy is gone
    assert (repo / "old.txt").is_file() and not (repo / "results").exists()
    assert not executed.exists()


async def test_the_run_is_the_agent_users(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "id -u; ls /root 2>&1 | head -1\n")
    async with reproduce(repo, settings()) as (record, _):
        uid, *listing = record.log_tail.splitlines()
    assert uid == "1000"  # the agent, in both modes
    if has_separate_root():  # and root's home is off limits to the run
        assert "Permission denied" in listing[0]


async def test_a_timeout_kills_the_run_and_is_recorded(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        "echo started\n(sleep 60; echo late > late.txt) &\nsleep 60\necho never\n",
    )
    async with reproduce(repo, settings(timeout_s=2)) as (record, executed):
        assert record.timed_out and record.exit_code is None
        assert record.duration_s is not None and 1.5 < record.duration_s < 30
        assert "started" in record.log_tail and "never" not in record.log_tail
        assert record.infra_failures == ()  # a timeout is the submission's result
        # the sandbox was closed with the run: its background job wrote nothing later
        assert not (executed / "late.txt").exists()


async def test_a_short_failing_run_is_not_retried(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "echo oops >&2\nexit 1\n")
    calls = 0

    @asynccontextmanager
    async def counting(**kw):
        nonlocal calls
        calls += 1
        async with grader_session(**kw) as session:
            yield session

    async with reproduce(repo, settings(session_factory=counting)) as (record, _):
        assert record.exit_code == 1 and "oops" in record.log_tail
    assert calls == 1


async def test_an_infrastructure_failure_is_retried_and_recorded(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "echo ok > done.txt\n")
    calls = 0

    @asynccontextmanager
    async def flaky(**kw):
        nonlocal calls
        calls += 1
        if calls == 1:
            raise SandboxUnavailableError("the bwrap sandbox did not start")
        async with grader_session(**kw) as session:
            yield session

    async with reproduce(repo, settings(session_factory=flaky)) as (record, _):
        assert record.exit_code == 0 and record.changes.created == ("done.txt",)
        assert record.infra_failures == (
            "SandboxUnavailableError: the bwrap sandbox did not start",
        )
        assert record.to_json()["attempts"] == 2
    assert calls == 2


async def test_infrastructure_failing_every_time_is_an_error_not_a_zero(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "true\n")

    @asynccontextmanager
    async def broken(**kw):
        raise SandboxUnavailableError("no sandbox today")
        yield  # pragma: no cover

    with pytest.raises(ReproductionError, match="3 time"):
        async with reproduce(repo, settings(session_factory=broken)):
            pass


async def test_no_reproduce_script(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "main.py").write_text("print(1)\n")
    async with reproduce(repo, settings()) as (record, _):
        assert not record.script_found and record.exit_code is None
        assert record.note == "no reproduce.sh in the submission"
        assert record.changes.touched == ()


def test_manifest_diff_counts_a_rewrite_with_the_same_bytes(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("1")
    (tmp_path / "same").write_text("2")
    before = manifest(tmp_path)
    os.utime(tmp_path / "a", (1, 1))  # written again, same bytes: reproduce.sh produced it
    (tmp_path / "b").symlink_to("a")
    changes = diff(before, manifest(tmp_path))
    assert changes.changed == ("a",) and changes.created == ("b",)
    assert changes.touched == ("a", "b")


async def test_outputs_regenerated_identically_count_as_produced(tmp_path: Path) -> None:
    # the agent ran reproduce.sh itself and left its outputs; the reproduction rewrites them
    repo = make_repo(
        tmp_path / "repo", "mkdir -p out\necho 42 > out/r.txt\n", {"out/r.txt": "42\n"}
    )
    os.utime(repo / "out" / "r.txt", (1_000_000, 1_000_000))
    async with reproduce(repo, settings()) as (record, _):
        assert record.changes.changed == ("out/r.txt",)


async def test_check_commands_run_sandboxed_on_a_read_only_view(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "true\n", {"pkg/mod.py": "VALUE = 42\n"})
    async with sandbox_command_runner({"submission": repo, "executed": repo}) as run:
        ok = await run(
            CommandRequest("python3 -c 'from pkg.mod import VALUE; print(VALUE)'", "submission", 30)
        )
        assert (ok.exit_code, ok.stdout.strip()) == (0, "42")
        write = await run(CommandRequest("echo x > new.txt", "executed", 30))
        assert write.exit_code != 0 and not (repo / "new.txt").exists()
        slow = await run(CommandRequest("sleep 30", "submission", 1))
        assert slow.timed_out
        host = await run(CommandRequest(f"ls {tmp_path}", "submission", 30))
        assert host.exit_code != 0  # the host's files are not in the sandbox


async def test_a_reproduction_finds_none_of_the_graders_files(tmp_path: Path) -> None:
    """In every mode (one user included): the run looks everywhere for what grades it (the
    papers' rubrics, judge prompts, addenda, labcoat's own package) and finds nothing."""
    repo = make_repo(
        tmp_path / "repo",
        "find /root /protected -mindepth 1 2>/dev/null\n"
        "find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o \\( -name rubric.json "
        "-o -name addendum.md -o -name 'judge*.md' -o -path '*/labcoat/suites' \\) -print "
        "2>/dev/null\n"
        "echo searched\n",
    )
    async with reproduce(repo, settings()) as (record, _):
        found = record.log_tail.strip().splitlines()
    assert found == ["searched"], found

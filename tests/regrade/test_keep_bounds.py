"""Keeping a workspace is bounded: a workspace can delay a score by seconds, never stop it.

Issue 39's attack runs through the real path: RE-Bench's fix_embedding, an agent that
leaves a 7 GiB sparse file (no disk blocks) and 400 hard links to it in /home/agent.
The store's own bounds are tested on a folder: caps before any read, one read per inode,
a deadline and cancellation.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from inspect_ai import eval, task_with
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from labcoat.families.rebench import rebench
from labcoat.grading import KEPT
from labcoat.grading._keepstore import Caps, KeepStopped, materialize, save_tree
from labcoat.grading._workspace import _copy_tree
from labcoat.regrade._run import _timed

GIB = 1 << 30
LINKS = 400
NOOP_MAX = 0.1
"""What a run that does nothing may score (the validation bound of a noop)."""
CAPS = Caps(file_bytes=100 << 20, sample_bytes=1 << 30, entries=100_000)


@solver
def sparse_and_linked(size_gib: int = 7, links: int = LINKS) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        script = (
            f"set -e; truncate -s {size_gib}G holes.bin; mkdir links; "
            f"for i in $(seq {links}); do ln holes.bin links/$i.bin; done; du -sh ."
        )
        result = await sandbox().exec(["bash", "-c", script], cwd="/home/agent", timeout=120)
        assert result.success, result.stderr
        return state

    return solve


def test_a_sparse_file_with_400_hard_links_delays_the_score_by_seconds(tmp_path: Path) -> None:
    task = task_with(
        rebench(tasks="fix_embedding/main", agent="noop"),
        solver=sparse_and_linked(),
        time_limit=300,  # before the fix: no score within the scoring limit (an error)
    )
    started = time.monotonic()
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    seconds = time.monotonic() - started
    assert log.samples is not None
    [sample] = log.samples
    assert sample.error is None, sample.error
    assert sample.scores is not None
    score = next(iter(sample.scores.values()))
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["normalized"] <= NOOP_MAX  # the scrambled model, as the noop left it
    kept = score.metadata[KEPT]
    assert "error" not in kept, kept
    # one file by reference, its links recorded as links of it: nothing read
    assert "holes.bin" in kept["by_reference"] or "links/1.bin" in kept["by_reference"]
    assert kept["hardlinks"] == LINKS
    assert seconds < 120, f"the run took {seconds:.0f} s"


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


def test_caps_come_before_any_read_and_links_are_read_once(tmp_path: Path) -> None:
    source, store = tmp_path / "ws", tmp_path / "store"
    source.mkdir()
    _sparse(source / "holes.bin", 7 * GIB)
    (source / "links").mkdir()
    for i in range(LINKS):
        os.link(source / "holes.bin", source / "links" / f"{i}.bin")
    small = source / "small.txt"
    small.write_text("kept\n")
    for i in range(LINKS):
        os.link(small, source / "links" / f"small-{i}.txt")
    started = time.monotonic()
    tree = save_tree(source, store, CAPS, ())
    assert time.monotonic() - started < 5
    first = tree.by_reference["holes.bin"]
    assert first["size"] == 7 * GIB and first["allocated"] < 1 << 20
    assert "sha256" not in first  # over the cap: never read
    assert len(tree.hardlinks) == 2 * LINKS
    assert tree.hardlinks["links/0.bin"] == "holes.bin"
    assert tree.hardlinks["links/small-0.txt"] == "small.txt"
    assert tree.kept_bytes == len("kept\n")  # one inode, counted once
    # restored as links again: the bytes once, not 401 times
    target = tmp_path / "restored"
    target.mkdir()
    manifest = {
        "files": tree.files,
        "links": tree.links,
        "dirs": tree.dirs,
        "hardlinks": tree.hardlinks,
        "by_reference": tree.by_reference,
    }
    missing = materialize(manifest, store, target)
    assert (target / "links" / "small-7.txt").stat().st_ino == (target / "small.txt").stat().st_ino
    assert "holes.bin" in missing and "links/0.bin" in missing


def test_the_walk_stops_at_its_deadline_and_when_cancelled(tmp_path: Path) -> None:
    source, store = tmp_path / "ws", tmp_path / "store"
    source.mkdir()
    for i in range(2000):
        (source / f"{i}.txt").write_text(str(i))
    with pytest.raises(KeepStopped, match="time"):
        save_tree(source, store, CAPS, (), deadline=time.monotonic() - 1)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(KeepStopped, match="cancelled"):
        save_tree(source, store, CAPS, (), cancel=cancel)
    many = Caps(file_bytes=CAPS.file_bytes, sample_bytes=CAPS.sample_bytes, entries=100)
    with pytest.raises(KeepStopped, match="100 entries"):
        save_tree(source, store, many, ())
    assert len(save_tree(source, store, CAPS, ()).files) == 2000


def test_a_restored_workspace_keeps_its_hard_links(tmp_path: Path) -> None:
    source, target = tmp_path / "kept", tmp_path / "sandbox"
    (source / "links").mkdir(parents=True)
    (source / "a.bin").write_bytes(b"x" * 1000)
    for i in range(LINKS):
        os.link(source / "a.bin", source / "links" / f"{i}.bin")
    target.mkdir()
    _copy_tree(source, target)
    inodes = {p.stat().st_ino for p in target.rglob("*.bin")}
    assert len(inodes) == 1 and (target / "links" / "399.bin").read_bytes() == b"x" * 1000


def test_a_rebench_timing_score_is_marked_as_measured_again() -> None:
    # RE-Bench keeps the flag in its own metadata (its spec reads it there): a re-measured
    # prefix_sum is no "change"
    assert _timed({"family": "rebench", "rebench": {"timing_sensitive": True}})
    assert _timed({"family": "rebench", "timing_sensitive": True})
    assert not _timed({"family": "rebench", "rebench": {"timing_sensitive": False}})
    # another family's metadata under that key is not RE-Bench's flag
    assert not _timed({"family": "paperbench", "rebench": {"timing_sensitive": True}})
    assert _timed({"timing_sensitive": True})
    assert not _timed({})

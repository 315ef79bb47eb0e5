"""The disk quota: everything a sample writes (home, /tmp, /run/labcoat, /root) together."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import pytest

from labcoat.sandbox._disk import _loop_disk, allocated_bytes, fuse_problem, release_mounts

MECHANISMS = ["loop", "fuse", "watch"] if os.geteuid() == 0 else ["fuse", "watch"]
MiB = 1024 * 1024
# the watcher checks every 0.1 s or more: a fast disk (into the page cache, 1.5 GB/s
# here when the machine is quiet) writes hundreds of MiB between two checks
WATCH_SLACK = 1024 * MiB


@functools.cache
def loop_problem() -> str | None:
    """Why root cannot mount a loop image here (None: it can); a container started with
    root's least privilege has no loop devices."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            _loop_disk(Path(folder), 64 * MiB)
        except OSError as ex:
            return str(ex)
        release_mounts(Path(folder))
    return None


@pytest.fixture(params=MECHANISMS)
def mechanism(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, sandbox_mode: str
) -> str:
    if request.param == "fuse" and (problem := fuse_problem(sandbox_mode != "one-user")):
        pytest.skip(f"no FUSE image for this user here: {problem}")
    if request.param == "loop" and (problem := loop_problem()):
        pytest.skip(f"no loop image here: {problem}")
    monkeypatch.setenv("LABCOAT_SANDBOX_DISK", request.param)
    return str(request.param)


def _bound(limit_mb: int, mechanism: str) -> int:
    return limit_mb * MiB + (WATCH_SLACK if mechanism == "watch" else limit_mb * MiB // 10)


async def test_3_gib_to_tmp_is_stopped(make_session, mechanism: str) -> None:
    s = await make_session(disk_mb=64)
    assert s.disk_mechanism.startswith(mechanism)
    result = await s.exec(
        ["sh", "-c", "dd if=/dev/zero of=/tmp/big bs=1M count=3072 status=none; echo rc=$?"],
        timeout=300,
    )
    assert "rc=0" not in result.stdout, result
    assert s.disk.used_bytes() <= _bound(64, mechanism)
    assert os.path.getsize(s.dirs.tmp / "big") <= _bound(64, mechanism)


async def test_many_files_stop_at_the_quota(make_session, mechanism: str) -> None:
    """An image (loop or FUSE) holds a sample's files to the quota, to the block; the
    watcher only to what lands between two checks."""
    s = await make_session(disk_mb=256)
    script = (
        "for i in $(seq 1 400); do head -c 1048576 /dev/zero > /home/agent/f$i || break; "
        "done; echo wrote $i"
    )
    result = await s.exec(["sh", "-c", script], timeout=300)
    files = allocated_bytes(s.dirs.home)
    assert files >= 200 * MiB, result  # it did write until it was stopped
    if mechanism == "watch":
        assert files <= 256 * MiB + WATCH_SLACK
    else:
        assert files <= 256 * MiB + MiB, f"{(files - 256 * MiB) / MiB:.1f} MiB over"
        assert s.disk.used_bytes() <= 256 * MiB + MiB


async def test_every_writable_place_counts_together(make_session, mechanism: str) -> None:
    s = await make_session(disk_mb=96)
    script = (
        "for i in $(seq 1 40); do "
        "for d in /tmp /home/agent /run/labcoat /root; do "
        "dd if=/dev/zero of=$d/f$i bs=1M count=4 status=none 2>/dev/null; done; done; "
        "echo finished"
    )
    result = await s.exec(["sh", "-c", script], user="root" if s.privileged else None, timeout=300)
    # 40 rounds x 4 places x 4 MiB = 640 MiB asked for; the quota holds at 96 MiB
    assert s.disk.used_bytes() <= _bound(96, mechanism), result
    if mechanism == "watch":
        assert s.disk.exceeded and "disk quota" in result.stderr


async def test_space_comes_back_after_deleting(make_session, mechanism: str) -> None:
    s = await make_session(disk_mb=64)
    fill = "dd if=/dev/zero of=/tmp/a bs=1M count=200 status=none; echo rc=$?"
    await s.exec(["sh", "-c", fill], timeout=300)
    await s.exec(["rm", "-f", "/tmp/a"], timeout=60)
    ok = await s.exec(["sh", "-c", "dd if=/dev/zero of=/tmp/b bs=1M count=16 status=none"])
    assert ok.success, ok.stderr


async def test_memory_backed_places_are_capped(make_session) -> None:
    s = await make_session(memory_mb=256)
    script = (
        "dd if=/dev/zero of=/dev/shm/x bs=1M count=1024 status=none 2>/dev/null; "
        "du -m /dev/shm/x | cut -f1; "
        "touch /dev/new 2>/dev/null && echo dev-writable || echo dev-read-only; "
        "dd if=/dev/zero of=/run/x bs=1M count=64 status=none 2>/dev/null; "
        "(du -m /run/x 2>/dev/null || echo 0) | cut -f1; "
        "echo ok > /dev/null && echo devnull-ok"
    )
    lines = (await s.exec(["sh", "-c", script], timeout=120)).stdout.split()
    assert int(lines[0]) <= 128  # half the sample's memory
    assert lines[1] == "dev-read-only"
    assert int(lines[2]) <= 1
    assert lines[3] == "devnull-ok"


async def test_no_quota_when_asked(make_session) -> None:
    s = await make_session(disk_mb=None)
    assert s.disk_mechanism == "none"
    assert (await s.exec(["sh", "-c", "echo x > /tmp/x"])).success


async def test_the_watcher_stops_commands_without_cgroups(make_session, monkeypatch) -> None:
    """Without a cgroup the sample's processes are found through bwrap's process tree."""
    monkeypatch.setenv("LABCOAT_SANDBOX_DISK", "watch")
    monkeypatch.setenv("LABCOAT_SANDBOX_CGROUPS", "0")
    s = await make_session(disk_mb=64)
    assert s.cgroup is None
    # up to 4 GiB asked for: a fast disk writes the first 64 MiB long before any check
    script = (
        "(for i in $(seq 1 500); do dd if=/dev/zero of=/tmp/bg$i bs=1M count=4 status=none; done) & "
        "for i in $(seq 1 500); do dd if=/dev/zero of=/tmp/f$i bs=1M count=4 status=none; done; "
        "echo finished"
    )
    result = await s.exec(["sh", "-c", script], timeout=300)
    assert "finished" not in result.stdout and "disk quota" in result.stderr
    assert s.disk.used_bytes() <= 64 * MiB + WATCH_SLACK  # stopped long before 4 GiB
    # the exec servers survived: the sandbox still runs commands
    assert (await s.exec(["rm", "-rf", "/tmp"], timeout=60)).returncode in (0, 1)
    assert (await s.exec(["echo", "alive"])).stdout.strip() == "alive"


async def test_a_grader_keeps_the_host_disk_without_root(make_session, monkeypatch) -> None:
    """Graders (disk_fuse=False) time code that reads and writes files: without root their
    quota is watched rather than served by FUSE; as root it is the loop image still."""
    monkeypatch.setenv("LABCOAT_SANDBOX_DISK", "auto")
    s = await make_session(disk_mb=64, disk_fuse=False)
    expected = "loop" if os.geteuid() == 0 else "watch"
    assert s.disk_mechanism.startswith(expected) or s.disk_mechanism == "watch"
    if os.geteuid() != 0:
        assert s.disk_mechanism == "watch"

"""A lone shared file whose folder holds host mounts (a container's /etc/ld.so.cache
beside the /etc/hosts its runtime binds) is the sample's own copy, not the host's inode.

In a user namespace the kernel refuses an overlay of a folder with mounts inside
(EINVAL), so overlaying /etc to show /etc/ld.so.cache left the file shared, and a lock
on it reached every other sample (seen in a Docker container as an ordinary user:
tests/sandbox/test_sample_channels.py::test_locks_on_every_other_shared_file_carry_nothing).
Here the host's mounts are given to `PrivateTrees` as a container's would be, and the
launcher is run for real.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from labcoat.sandbox._private_trees import PrivateTrees
from labcoat.sandbox._trees_exec import COPY_MARK

SHARED = "/etc/ld.so.cache"
CONTAINER_MOUNTS = ["/", "/etc/hosts", "/etc/resolv.conf", "/proc", "/dev"]

needs_file = pytest.mark.skipif(not os.path.isfile(SHARED), reason=f"{SHARED} is not here")


def _seen(trees: PrivateTrees, source: str) -> str:
    """The host path bwrap would bind for `source`, as the launcher's namespace sees it."""
    [flag, place, target] = trees.bind(source, source)
    assert (flag, target) == ("--ro-bind", source)
    return place


def _inside(trees: PrivateTrees, script: str) -> str:
    """Run `script` (sh) where the launcher has mounted the sample's trees."""
    done = subprocess.run(
        [*trees.launcher(), "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_file
def test_a_file_beside_host_mounts_is_the_sample_s_own_copy(tmp_path: Path) -> None:
    trees = PrivateTrees(staging=tmp_path / "staging", mounts=CONTAINER_MOUNTS)
    place = _seen(trees, SHARED)
    assert trees.trees == [] and trees.copies == [SHARED]
    assert f"{COPY_MARK}{SHARED}" in trees.launcher()
    out = _inside(trees, f'stat -c "%d:%i" {place} {SHARED}; cmp {place} {SHARED} && echo same')
    copy, host = out.split()[:2]
    assert copy != host, "the copy is the host's inode"
    assert out.split()[-1] == "same"


@needs_file
def test_control_without_mounts_beside_it_the_folder_is_overlaid(tmp_path: Path) -> None:
    # the honest path alone: the folder's overlay (no copy) where the kernel allows one
    trees = PrivateTrees(staging=tmp_path / "staging", mounts=["/"])
    place = _seen(trees, SHARED)
    assert trees.copies == [] and trees.trees == [os.path.dirname(SHARED)]
    assert place.startswith(str(tmp_path / "staging" / "0"))

"""Run inside a sandbox, as the user whose reach is measured: every path of the visible
file system this process can write, and every path its uid owns, as JSON on stdout.

    python3 writable_probe.py

Writable: a folder it can create a file in, a file (or device) it can open for writing,
a socket or FIFO it may write to. access(W_OK) is not trusted alone: every folder gets a
real attempt (a file created and removed) and every file a real open for writing (no
truncation, nothing written); either success counts. A regular file or folder on a
read-only mount (ST_RDONLY, read for every mount point that /proc/self/mountinfo lists,
files bound singly included) cannot be written by anyone: the kernel refuses before any
permission is looked at, so those get no attempt (devices, sockets and FIFOs there still
do). Links are not followed (what they point to is walked where it is). Each list is given
as its smallest cover: "FOLDER/**" stands for a folder and everything in it. The processes' own /proc/PID folders (this probe's
and any other process's) are not walked: they are per-process state that ends with the
process, not a place to keep anything. Standard library only: it runs in the sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys

SKIPPED_PROC = ("self", "thread-self")


def _dir_writable(path: str, counter: list[int]) -> bool:
    if os.access(path, os.W_OK | os.X_OK, follow_symlinks=False):
        return True
    counter[0] += 1
    name = os.path.join(path, f".labcoat-probe-{os.getpid()}-{counter[0]}")
    try:
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return True


def _file_writable(path: str, mode: int) -> bool:
    if os.access(path, os.W_OK, follow_symlinks=False):
        return True
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
        return False  # a socket, FIFO or block device: its permission bits say it
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    os.close(fd)
    return True


def _mount_points() -> set[str]:
    points = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4]
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point))
    return points


def _read_only(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class _Walk:
    """The walk's findings, each set as its smallest cover: a folder whose every entry
    (itself included, all the way down) is in the set is reported as "FOLDER/**"."""

    def __init__(self) -> None:
        self.uid = os.geteuid()
        self.points = _mount_points()
        self.counter = [0]
        self.writable: list[str] = []
        self.owned: list[str] = []
        self.unreadable: list[str] = []

    def folder(self, path: str, read_only: bool) -> tuple[bool, bool]:
        """Walk `path` (a folder); whether all of it is writable, and all of it owned."""
        info = os.lstat(path)
        writable = not read_only and _dir_writable(path, self.counter)
        owned = info.st_uid == self.uid
        marks = (len(self.writable), len(self.owned))
        all_writable, all_owned = writable, owned
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            self.unreadable.append(path)
            entries = []
            all_writable = all_owned = False  # what it holds is unknown
        for entry in entries:
            if path == "/proc" and (entry.name.isdigit() or entry.name in SKIPPED_PROC):
                continue
            child = entry.path
            try:
                mode = os.lstat(child).st_mode
                child_uid = os.lstat(child).st_uid
            except OSError:
                continue
            child_ro = _read_only(child) if child in self.points else read_only
            if stat.S_ISDIR(mode):
                w, o = self.folder(child, child_ro)
            else:
                o = child_uid == self.uid
                if stat.S_ISLNK(mode) or (child_ro and stat.S_ISREG(mode)):
                    w = False
                else:
                    w = _file_writable(child, mode)
                if w:
                    self.writable.append(child)
                if o:
                    self.owned.append(child)
            all_writable = all_writable and w
            all_owned = all_owned and o
        whole = path.rstrip("/") + "/**"
        if all_writable:
            del self.writable[marks[0] :]
            self.writable.append(whole)
        elif writable:
            self.writable.append(path)
        if all_owned:
            del self.owned[marks[1] :]
            self.owned.append(whole)
        elif owned:
            self.owned.append(path)
        return all_writable, all_owned


def probe() -> dict[str, object]:
    walk = _Walk()
    walk.folder("/", _read_only("/"))
    return {
        "uid": walk.uid,
        "writable": sorted(walk.writable),
        "owned": sorted(walk.owned),
        "unreadable": sorted(walk.unreadable),
    }


if __name__ == "__main__":
    json.dump(probe(), sys.stdout)

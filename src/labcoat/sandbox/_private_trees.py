"""Each sample's own view of the read-only trees that samples share.

Every sample of a task sees the same host trees read-only: the task's environment, the
interpreter, the system tree, an image's root, /etc's host files, the exec server. A bind
mount shows the host's inodes, and a lock belongs to the inode, so one sample's flock,
POSIX or OFD lock on a shared file is seen by every other (F_GETLK even names the
holder): a channel between samples. `PrivateTrees` shows each such tree through an
overlay of the sample's own instead (`_trees_exec` mounts them before bwrap starts), whose
inodes are the sample's alone; and, labcoat run as root, the sample's own /dev nodes.

A place inside a tree where the host has mounted something else (a folder or a file
bound there, as container runtimes do with /etc/resolv.conf or a GPU driver's
libraries) is not seen through the tree's overlay: a folder gets an overlay of its own,
a file is bound as it is (shared: docs/sandbox.md, "What samples share"). And a lone
file whose folder holds such mounts (a container's /etc/ld.so.cache beside its
/etc/hosts) is copied into the sample's own tmpfs instead of overlaying the folder: in a
user namespace the kernel refuses an overlay of a folder with mounts inside (EINVAL),
which would leave the file shared.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from labcoat.sandbox import _trees_exec

DEVICES = _trees_exec.DEVICES


def host_mount_points() -> list[str]:
    """Where the host has something mounted (this process's mount namespace)."""
    points = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return ["/"]
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            points.append(_unescape(fields[4]))
    return points


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


@dataclass
class PrivateTrees:
    """The overlays one sample's bwrap command line shows its shared trees through."""

    staging: Path
    """An empty host folder of the sample's: the trees are mounted under it."""
    devices: bool = field(default_factory=lambda: os.geteuid() == 0)
    """Make the sample's own /dev nodes (only root can)."""
    mounts: list[str] = field(default_factory=host_mount_points)
    trees: list[str] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)
    """Files the sample sees as copies of its own (see the module's docstring)."""

    def _mount_of(self, path: str) -> str:
        return max((m for m in self.mounts if _under(path, m)), key=len, default="/")

    def tree(self, folder: str) -> None:
        """Show everything under `folder` through one overlay (an image's root)."""
        real = os.path.realpath(folder)
        if real not in self.trees:
            self.trees.append(real)

    def _place(self, real: str) -> str:
        """Where `real` (a resolved host path) is seen through the overlays."""
        mount = self._mount_of(real)
        for index, tree in enumerate(self.trees):
            if _under(real, tree) and self._mount_of(tree) == mount:
                return self._at(index, os.path.relpath(real, tree))
        if not os.path.isdir(real) and self._holds_mounts(os.path.dirname(real)):
            if real not in self.copies:
                self.copies.append(real)
            return str(self.staging / _trees_exec.copy_name(self.copies.index(real)))
        self.trees.append(real if os.path.isdir(real) else os.path.dirname(real))
        return self._at(len(self.trees) - 1, "." if os.path.isdir(real) else os.path.basename(real))

    def _holds_mounts(self, folder: str) -> bool:
        return any(m != folder and _under(m, folder) for m in self.mounts)

    def _at(self, index: int, relative: str) -> str:
        return os.path.normpath(os.path.join(self.staging, str(index), relative))

    def bind(self, source: str, target: str) -> list[str]:
        """bwrap arguments that show host `source` read-only at `target`, privately."""
        real = os.path.realpath(source)
        if not os.path.isdir(real):
            if real in self.mounts:  # a file the host mounted: no overlay shows it
                return ["--ro-bind", real, target]
            return ["--ro-bind", self._place(real), target]
        args = ["--ro-bind", self._place(real), target]
        inside = sorted(m for m in self.mounts if m != real and _under(m, real))
        for point in inside:  # the outermost ones: each binds its own inner ones
            if self._mount_of(os.path.dirname(point)) == self._mount_of(real):
                args += self.bind(point, target.rstrip("/") + point[len(real) :])
        return args

    def dev_args(self) -> list[str]:
        """After bwrap's --dev: the sample's own nodes over the host's (root only)."""
        if not self.devices:
            return []
        args: list[str] = []
        for name in DEVICES:
            args += ["--dev-bind", str(self.staging / "dev" / name), f"/dev/{name}"]
        return args

    def proc_args(self) -> list[str]:
        """After --proc: /proc/locks empty. It lists every lock of the machine, and an OFD
        lock has no pid, so no pid namespace hides it: its byte range is a message."""
        return ["--ro-bind", str(self.staging / "nothing"), "/proc/locks"]

    def launcher(self) -> list[str]:
        """argv prefix that mounts the overlays, then runs the program (bwrap)."""
        self.staging.mkdir(exist_ok=True)
        return [
            sys.executable,
            "-I",
            "-S",
            _trees_exec.__file__,
            str(self.staging),
            "1" if self.devices else "0",
            *self.trees,
            *(_trees_exec.COPY_MARK + path for path in self.copies),
            "--",
        ]

"""A sandbox whose system is a root file system of its own (`BwrapConfig.system_root`):
its folders and its /etc, mounted in place of the host's.

A read-only tree cannot take new mount points, so it is mounted entry by entry: a folder
that holds a place the sandbox mounts something at (its own /tmp, /run, /opt/labcoat,
the homes, a task's binds, the host's pip configuration) is made anew and its entries
mounted inside it, down to that place; every other entry is mounted whole.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from labcoat.sandbox._config import BwrapConfig
from labcoat.sandbox._layout import SampleDirs
from labcoat.sandbox._private_trees import PrivateTrees

Bind = str | Callable[[str, str], list[str]]
"""A bwrap option (`--ro-bind`), or what gives the arguments that show a source at a
place (`PrivateTrees.bind`)."""

# what the sandbox makes itself, whatever the tree holds there
SANDBOX_PLACES = (
    "/etc",
    "/home",
    "/root",
    "/tmp",
    "/proc",
    "/dev",
    "/sys",
    "/run",
    "/opt/labcoat",
    "/var/tmp",
    "/var/run",
    "/var/lock",
)
IDENTITY_FILES = ("passwd", "group")
NAME_FILES = ("hosts", "hostname", "profile")


def tree_mounts(source: Path, target: str, holes: set[str], bind: Bind) -> list[str]:
    """bwrap arguments that show `source` at `target`, leaving every place in `holes`
    (and the folders leading to them) for other mounts."""
    args: list[str] = []
    for entry in sorted(source.iterdir()):
        place = f"{target.rstrip('/')}/{entry.name}"
        if place in holes:
            continue
        leads = any(hole.startswith(place + "/") for hole in holes)
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry), place]
        elif leads and entry.is_dir():
            mode = stat.S_IMODE(entry.stat().st_mode)
            args += ["--perms", f"{mode:04o}", "--dir", place]
            args += tree_mounts(entry, place, holes, bind)
        elif callable(bind):
            args += bind(str(entry), place)
        else:
            args += [bind, str(entry), place]
    return args


def _holes(config: BwrapConfig, extra: Iterable[str] = ()) -> set[str]:
    return {*SANDBOX_PLACES, *(b.target.rstrip("/") for b in config.binds), *extra}


def system_root_mounts(config: BwrapConfig, trees: PrivateTrees | None = None) -> list[str]:
    """The system root's folders at their places (read-only, through one overlay of the
    sample's own with `trees`); a build's writable tree is mounted whole, so that
    whatever its steps create anywhere stays."""
    root = Path(str(config.system_root))
    if config.system_writable:
        return ["--bind", str(root), "/"]
    if trees is None:
        return tree_mounts(root, "/", _holes(config), "--ro-bind")
    trees.tree(str(root))
    return tree_mounts(root, "/", _holes(config), trees.bind)


def system_root_etc(
    config: BwrapConfig, dirs: SampleDirs, network: bool, trees: PrivateTrees | None = None
) -> list[str]:
    """The system root's /etc. A sample sees it read-only with the sandbox's identity
    files over it (the root's own users merged in by `_layout`); a build writes it (apt
    adds users), with only the name files and the network's over it."""
    etc = Path(str(config.system_root)) / "etc"
    over = [*NAME_FILES, *(() if config.system_writable else IDENTITY_FILES)]
    if config.system_writable:
        args = ["--bind", str(etc), "/etc"]
    else:
        holes = {b.target for b in config.binds if b.target.startswith("/etc/")}
        args = ["--perms", "0755", "--dir", "/etc"]
        args += tree_mounts(etc, "/etc", holes, trees.bind if trees else "--ro-bind")
    for name in over:
        args += ["--ro-bind", str(dirs.etc / name), f"/etc/{name}"]
    if not config.system_writable and dirs.profile_d.is_dir():
        args += ["--ro-bind", str(dirs.profile_d), "/etc/profile.d"]
    if network and os.path.exists("/etc/resolv.conf"):
        resolv = os.path.realpath("/etc/resolv.conf")
        args += (
            trees.bind(resolv, "/etc/resolv.conf")
            if trees
            else ["--ro-bind", resolv, "/etc/resolv.conf"]
        )
    return args

"""The host side of sandboxes: folders (each sample's, the cache), users, and the
isolation mode (root; rootless with separate users through a subordinate id range;
rootless with one user)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import posixpath
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from labcoat.sandbox._config import BwrapConfig
from labcoat.sandbox._disk import release_mounts
from labcoat.sandbox._paths import AGENT_HOME
from labcoat.sandbox._userns import Mapping, caller_mapping, mapping_problem, run_as_namespace_root

AGENT_UID = 1000
PROTECTED_GID = 999
"""The `protected` system group of METR's task image (`groupadd --system protected`):
files a grader may use and the agent may not change belong to it."""
SAMPLE_PREFIX = "sample-"
OWNER_FILE = ".owner"
"""Locked (flock) by the process that runs the sample, for as long as it runs."""
KEPT_FILE = ".kept"
"""Marks a folder kept on purpose (LABCOAT_KEEP_SANDBOXES=1): never swept."""
LEGACY_AGE_S = 6 * 3600
"""A folder without an owner file (made by an older labcoat) counts as left behind only
when this old and nothing runs in its cgroup."""

logger = logging.getLogger(__name__)


class Isolation(StrEnum):
    """How a sandbox keeps its users apart (recorded with every score)."""

    ROOT = "root"
    """labcoat runs as root: real, distinct root and agent users, no user namespace."""
    SEPARATE_USERS = "rootless-separate-users"
    """An ordinary user with a subordinate id range: the same users, in a user namespace
    that maps the range (see `_userns`)."""
    ONE_USER = "rootless-one-user"
    """An ordinary user without one: a user namespace with the agent as its only user."""


MODE_ENV = "LABCOAT_SANDBOX_MODE"
"""auto (the default), root, separate-users or one-user."""
UNSAFE_STANDIN_ENV = "LABCOAT_UNSAFE_ROOT_ONE_USER"
"""=1 lets root run the one-user mode's stand-in, whose agent is host uid 0 with its
capabilities dropped: for labcoat's own tests, which run only code of their own there."""
MODE_CHOICES = {
    "root": Isolation.ROOT,
    "separate-users": Isolation.SEPARATE_USERS,
    "one-user": Isolation.ONE_USER,
}


def isolation() -> Isolation:
    """The mode this process's sandboxes run in: root as root, separate users for anyone
    with a usable subordinate range, else one user. LABCOAT_SANDBOX_MODE chooses one
    (LABCOAT_SANDBOX_USERNS=1, the older spelling, means one-user)."""
    chosen = os.environ.get(MODE_ENV, "auto") or "auto"
    if chosen == "auto" and os.environ.get("LABCOAT_SANDBOX_USERNS") == "1":
        chosen = "one-user"
    root = os.geteuid() == 0
    if chosen == "auto":
        if root:
            return Isolation.ROOT
        return Isolation.SEPARATE_USERS if mapping_problem() is None else Isolation.ONE_USER
    wanted = MODE_CHOICES.get(chosen)
    if wanted is None:
        problem = f"{MODE_ENV} is {chosen!r}: choose auto, {', '.join(MODE_CHOICES)}"
    elif wanted is Isolation.ROOT and not root:
        problem = f"{MODE_ENV}=root needs labcoat to run as root"
    elif wanted is Isolation.SEPARATE_USERS and mapping_problem() is not None:
        problem = f"{MODE_ENV}=separate-users: {mapping_problem()}"
    elif wanted is Isolation.ONE_USER and root and os.environ.get(UNSAFE_STANDIN_ENV) != "1":
        problem = (
            f"{MODE_ENV}=one-user as root would run the agent as host root (every sysctl "
            f"root may write, such as kernel.core_pattern, writable from the sandbox): run "
            f"that mode as an ordinary user without a subordinate id range "
            f"(scripts/test-as-users.sh does)"
        )
    else:
        return wanted
    from labcoat._errors import LabcoatError

    raise LabcoatError(problem)


def separate_users() -> bool:
    """Whether sandboxes have a real root apart from the agent (root or a mapped range)."""
    return isolation() is not Isolation.ONE_USER


def mapped() -> Mapping | None:
    """The subordinate-id mapping when sandboxes run in it (separate users, rootless)."""
    return caller_mapping() if isolation() is Isolation.SEPARATE_USERS else None


def host_ids(uid: int, gid: int) -> tuple[int, int]:
    """The host's ids for a sandbox's uid and gid (the same as root; the range's mapped)."""
    mapping = mapped()
    return (uid, gid) if mapping is None else (mapping.host_uid(uid), mapping.host_gid(gid))


def cache_dir() -> Path:
    """Where built environments, images and downloads are kept (LABCOAT_CACHE)."""
    root = os.environ.get("LABCOAT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "labcoat"
    )
    return Path(root)


def default_sandboxes_root(uid: int | None = None) -> Path:
    """`$TMPDIR/labcoat-sandboxes-UID`: each user's own, so users never share one."""
    uid = os.geteuid() if uid is None else uid
    return Path(tempfile.gettempdir()) / f"labcoat-sandboxes-{uid}"


def sandboxes_root() -> Path:
    """Where this user's samples' folders live (LABCOAT_SANDBOX_DIR, else the default)."""
    chosen = os.environ.get("LABCOAT_SANDBOX_DIR")
    root = Path(chosen) if chosen else default_sandboxes_root()
    root.mkdir(parents=True, exist_ok=True, mode=0o711)
    if not chosen:
        _check_own(root)
    return root


def _check_own(root: Path) -> None:
    """A default folder someone else made (in a shared /tmp) is refused, not used."""
    owner = root.lstat().st_uid
    if owner != os.geteuid() or root.is_symlink():
        from labcoat._errors import LabcoatError

        raise LabcoatError(
            f"{root} belongs to another user (uid {owner}); remove it, or choose a folder "
            "of your own with LABCOAT_SANDBOX_DIR"
        )


def gpu_locks_dir() -> Path:
    """The GPU lock files: one folder for the whole machine, so every user's samples
    share one pool of GPUs."""
    return _machine_wide_dir("gpu-locks")


MACHINE_LOCK_DIR_ENV = "LABCOAT_MACHINE_LOCK_DIR"


def machine_locks_dir() -> Path:
    """The machine lock's files (timing measurements against everyone's commands), or
    LABCOAT_MACHINE_LOCK_DIR's: processes that name one share the lock with none else."""
    chosen = os.environ.get(MACHINE_LOCK_DIR_ENV)
    if chosen:
        folder = Path(chosen)
        folder.mkdir(parents=True, exist_ok=True, mode=0o755)
        return folder
    return _machine_wide_dir("machine-locks")


def _machine_wide_dir(name: str) -> Path:
    """A folder every user's labcoat processes share (sticky and writable by all, as
    /tmp); under LABCOAT_SANDBOX_DIR when that is set (a run kept apart from the others)."""
    chosen = os.environ.get("LABCOAT_SANDBOX_DIR")
    if chosen:
        folder = Path(chosen) / name
        folder.mkdir(parents=True, exist_ok=True, mode=0o755)
        return folder
    folder = Path(tempfile.gettempdir()) / f"labcoat-{name}"
    try:
        folder.mkdir(mode=0o1777)
        folder.chmod(0o1777)  # the umask took bits off
    except FileExistsError:
        pass
    return folder


@dataclass(frozen=True)
class SampleDirs:
    """Host directories backing one sample's sandbox."""

    root: Path

    @property
    def disk(self) -> Path:
        """Everything the sample can write lives here, under one quota (see _disk)."""
        return self.root / "disk"

    @property
    def home(self) -> Path:
        return self.disk / "home"

    @property
    def root_home(self) -> Path:
        return self.disk / "root"

    @property
    def tmp(self) -> Path:
        return self.disk / "tmp"

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def profile_d(self) -> Path:
        """Bound at /etc/profile.d: what login shells add to the sandbox's environment."""
        return self.root / "etc" / "profile.d"

    @property
    def proxy_socket(self) -> Path:
        """The filtering proxy's socket, bound read-only at /run/labcoat/proxy.sock (the
        folder is the sandbox's own, its root's: no user of the sandbox can write there,
        whoever the harness is in its id mapping). Beside the disk, not on it: nothing
        the sandbox writes lives here."""
        return self.root / "proxy.sock"


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "uid": self.uid, "gid": self.gid, "home": self.home}


AGENT = User("agent", AGENT_UID, AGENT_UID, AGENT_HOME)
ROOT = User("root", 0, 0, "/root")


_OUR_NAMES = {"root", "agent", "nobody", "nogroup", "protected"}


def _system_lines(system_root: str | None, name: str) -> str:
    """A system root's own users or groups (those its packages added), as /etc lines."""
    if not system_root:
        return ""
    path = Path(system_root, "etc", name)
    lines = path.read_text().splitlines() if path.is_file() else []
    return "".join(f"{line}\n" for line in lines if line and line.split(":")[0] not in _OUR_NAMES)


def _write_identity_files(dirs: SampleDirs, system_root: str | None = None) -> None:
    dirs.etc.mkdir(parents=True, exist_ok=True)
    (dirs.etc / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\n"
        f"agent:x:{AGENT_UID}:{AGENT_UID}:agent:{AGENT_HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        + _system_lines(system_root, "passwd")
    )
    (dirs.etc / "group").write_text(
        f"root:x:0:\nprotected:x:{PROTECTED_GID}:\nagent:x:{AGENT_UID}:\nnogroup:x:65534:\n"
        + _system_lines(system_root, "group")
    )
    (dirs.etc / "hosts").write_text("127.0.0.1\tlocalhost labcoat\n::1\tlocalhost\n")
    (dirs.etc / "hostname").write_text("labcoat\n")
    # a login shell (`bash -l`, `runuser --login`) keeps the sandbox's environment: the
    # host's /etc/profile would reset PATH and hide the task's Python environment, so the
    # sandbox's own profile reads only /etc/profile.d (where write_login_profile puts it)
    (dirs.etc / "profile").write_text(
        "# labcoat: the sandbox's environment (PATH, the task's venv) is set by the harness\n"
        "umask 022\n"
        'for script in /etc/profile.d/*.sh; do [ -r "$script" ] && . "$script"; done\n'
        "unset script\n"
    )


def write_login_profile(dirs: SampleDirs, environment: dict[str, str]) -> None:
    """/etc/profile.d/labcoat.sh: login shells (`bash -l`, `runuser --login`, `su -`) start
    from a clean environment and the host's /etc/profile; this puts the sandbox's own
    variables (the task's Python first on PATH, thread counts, proxy) back."""
    dirs.profile_d.mkdir(parents=True, exist_ok=True)
    lines = [f"export {name}={shlex.quote(value)}" for name, value in sorted(environment.items())]
    (dirs.profile_d / "labcoat.sh").write_text("\n".join(lines) + "\n")


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """Give a host tree to a sandbox's user (its uid and gid inside the sandbox); nothing
    to do with one user, who owns everything already."""
    chown_trees([(path, uid, gid)])


def chown_trees(trees: list[tuple[Path, int, int]]) -> None:
    """chown_tree for several trees (rootless: in one namespace, ~35 ms, not one each)."""
    mode = isolation()
    if mode is Isolation.ROOT:
        for path, uid, gid in trees:
            os.chown(path, uid, gid)
            for parent, subdirs, files in os.walk(path):
                for name in subdirs + files:
                    with contextlib.suppress(FileNotFoundError):
                        os.lchown(os.path.join(parent, name), uid, gid)
    elif mode is Isolation.SEPARATE_USERS and trees:
        script = " && ".join(
            f"chown -hR {uid}:{gid} -- {shlex.quote(str(path))}" for path, uid, gid in trees
        )
        run_as_namespace_root(["sh", "-c", script])


def as_sandbox_root(argv: list[str]) -> str:
    """Run a host command with the rights the sandbox's root has over its files: as it is
    (root, or the one user), or rootless with separate users as root of a namespace that
    maps the range. Its output; CalledProcessError or RuntimeError when it fails."""
    if mapped() is not None:
        return run_as_namespace_root(argv)
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def copy_tree_as_root(source: Path | str, target: Path, mode: int | None = None) -> None:
    """Copy a tree with its owners (where there are several users) and modes, with the
    rights of the sandbox's root; `target` then has `source`'s mode, or `mode`. tar, not
    `cp -a`: cp's ACL calls leave files on a FUSE image at 0600 with an ACL."""
    target.mkdir(parents=True, exist_ok=True)
    owners = "--same-owner" if separate_users() else "--no-same-owner"
    script = f'tar -C "$0" -cf - . | tar -C "$1" -xpf - --no-acls --no-xattrs {owners}'
    if mode is not None:
        script += f' && chmod {mode:o} "$1"'
    as_sandbox_root(["sh", "-c", script, str(source), str(target)])


def remove_tree(path: Path) -> None:
    """Remove a sandbox's host tree, also what its root (another id, rootless) left:
    rootless with separate users in one pass as that root, which may remove it all."""
    if not path.exists():
        return
    if mapped() is not None:
        with contextlib.suppress(OSError, RuntimeError):
            run_as_namespace_root(["rm", "-rf", "--", str(path)])
            return
    shutil.rmtree(path, ignore_errors=True)


def prepare_dirs(d: SampleDirs, config: BwrapConfig, separate_root: bool) -> None:
    """Create the sample's host directories, as `config` and the mode want them (the
    disk folder, `d.disk`, exists already)."""
    if config.home_source:
        shutil.copytree(config.home_source, d.home, symlinks=True)
    else:
        d.home.mkdir()
    workdir = config.workdir
    if workdir == AGENT_HOME or workdir.startswith(AGENT_HOME + "/"):
        (d.home / posixpath.relpath(workdir, AGENT_HOME)).mkdir(parents=True, exist_ok=True)
    d.tmp.mkdir()
    os.chmod(d.tmp, 0o1777)
    _write_identity_files(d, config.system_root)
    if config.root_source and mapped() is not None:
        # rootless, a root_source of root's (an image's /root) is readable by root alone
        copy_tree_as_root(config.root_source, d.root_home, mode=0o700)
    else:
        if config.root_source:
            shutil.copytree(config.root_source, d.root_home, symlinks=True)
        else:
            d.root_home.mkdir()
        os.chmod(d.root_home, 0o700)
    if separate_root:
        # /tmp is root's, as on any system (Inspect's tool injection trusts no other), and
        # so is the proxy's socket: rootless, the harness is the agent's uid in the
        # sandbox, and what it makes would otherwise be the agent's
        trees = [(d.home, AGENT_UID, AGENT_UID), (d.root_home, 0, 0), (d.tmp, 0, 0)]
        if d.proxy_socket.exists():
            trees.append((d.proxy_socket, 0, 0))
        chown_trees(trees)


def give_to_agent(path: Path) -> None:
    """Hand host files to the sandbox's agent user (the caller's own without root)."""
    chown_tree(path, AGENT_UID, AGENT_UID)


def open_lock_file(path: Path) -> int:
    """A descriptor to flock in a machine-wide folder: never inherited by a child (a
    sandbox would keep the lock), read only where another user made the file (flock needs
    no more), never through a link (the folder is writable by all)."""
    flags = os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    except PermissionError:
        return os.open(path, os.O_RDONLY | flags)


def claim(root: Path) -> int:
    """Mark a sample folder as this process's: a lock the kernel releases when the process
    dies, however it dies (kill -9 included). Keep the descriptor open while it runs."""
    fd = os.open(root / OWNER_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _owner_gone(root: Path, busy: Callable[[str], bool | None]) -> bool:
    try:
        fd = os.open(root / OWNER_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        # no owner file: an older labcoat made it (or a run is creating it right now)
        with contextlib.suppress(OSError):
            old = time.time() - root.stat().st_mtime > LEGACY_AGE_S
            return old and not busy(f"labcoat-{root.name}")
        return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its owner still runs
    finally:
        os.close(fd)
    return True


def sweep_left_behind(
    root: Path, busy: Callable[[str], bool | None], remove_cgroup: Callable[[str], None]
) -> list[str]:
    """Remove the sample folders (and their cgroups) of runs that died without cleaning up.

    `busy(cgroup name)` says whether processes still run in a cgroup (None: no cgroup);
    `remove_cgroup(name)` kills what is left in one and removes it.
    """
    swept = []
    for folder in sorted(root.glob(f"{SAMPLE_PREFIX}*")):
        if not folder.is_dir() or (folder / KEPT_FILE).exists():
            continue
        if not _owner_gone(folder, busy):
            continue
        try:
            remove_cgroup(f"labcoat-{folder.name}")
        except OSError as ex:
            logger.debug("could not remove the cgroup of %s: %s", folder, ex)
        release_mounts(folder)  # a disk image stays mounted when its run dies
        remove_tree(folder)
        swept.append(folder.name)
    if swept:
        logger.info("removed %d sandbox folder(s) left by runs that died", len(swept))
    return swept

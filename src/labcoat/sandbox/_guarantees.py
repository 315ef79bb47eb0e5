"""What isolation this machine gives a sample, in words: the mode, the mechanisms of its
limits and disk quota, each guarantee weaker than root's with what would give it back,
and why sandboxes cannot start at all where user namespaces are refused."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from labcoat.sandbox import _trees_exec
from labcoat.sandbox._container import container_refused
from labcoat.sandbox._disk import disk_mode, fuse_problem
from labcoat.sandbox._layout import MODE_ENV, Isolation, isolation
from labcoat.sandbox._limits import cgroup_user, cgroup_version, limits_here
from labcoat.sandbox._userns import mapping_problem

REFUSED_REMEDY = "or run labcoat as root, or choose another sandbox (--sandbox docker)"


@dataclass(frozen=True)
class Guarantees:
    """How this machine's sandboxes are isolated (`labcoat check` prints it; each score
    records its own sample's, `sandbox_record`)."""

    mode: Isolation
    limits: str
    disk: str
    weaker: list[str] = field(default_factory=list)
    """One line per guarantee weaker than root's here: what, and what would give it back."""


def disk_here(mode: Isolation) -> str:
    """The disk quota's mechanism a sample gets here (`_disk.create_disk`'s choice)."""
    chosen = disk_mode()
    if chosen == "off":
        return "none (LABCOAT_SANDBOX_DISK=off)"
    if chosen == "loop" or (chosen == "auto" and os.geteuid() == 0):
        return "loop (ext4 image)"
    problem = fuse_problem(mode is not Isolation.ONE_USER)
    if chosen == "fuse" or (chosen == "auto" and problem is None):
        return "fuse (ext4 image)"
    return "watch" + (f" (no FUSE image: {problem})" if problem and chosen == "auto" else "")


def guarantees_here() -> Guarantees:
    """This machine's isolation, probed (a cgroup made and removed, a namespace mapped)."""
    mode = isolation()
    limits, disk = limits_here(), disk_here(mode)
    weaker: list[str] = []
    if mode is Isolation.ONE_USER:
        weaker.append(
            "one user: a grader and the agent are one uid; labcoat's graders run the "
            "agent's code in a sandbox nested in theirs (LABCOAT_AS_AGENT), but a grader "
            "that runs it in its own process or as itself shares its files and processes, "
            "and families that need root's runuser or a writable /protected cannot run"
            + (f" — {_one_user_cause()}" if os.geteuid() != 0 else "")
        )
    if limits.startswith("rlimits"):
        weaker.append(
            "memory and process limits hold per process, not for a sample's processes "
            f"together — {_cgroup_remedy()}"
        )
    if disk.startswith("watch"):
        weaker.append(
            "the disk quota is watched, not enforced: many files written between two checks "
            "can go past it — an ext4 image gives a hard quota (root's loop device, or "
            "FUSE: " + (fuse_problem(mode is not Isolation.ONE_USER) or "usable") + ")"
        )
    if os.geteuid() != 0:
        weaker.append(
            "samples share the host's /dev nodes (null, zero, urandom, ...), and a lock on "
            "one is seen by every sample: a channel between samples (docs/sandbox.md, "
            "'What samples share') — only root makes each sample its own nodes"
        )
    overlay = overlay_problem()
    if overlay:
        weaker.append(
            f"shared read-only trees are bound, not overlaid ({overlay}): a lock on one of "
            "their files is seen by every sample — Linux 5.11 or later gives ordinary "
            "users overlays"
        )
    if mode is not Isolation.ROOT:
        weaker.append(
            "task images whose build steps use apt need a Debian root file system, which "
            "only root builds"
        )
    return Guarantees(mode, limits, disk, weaker)


def weaker_isolation() -> str | None:
    """One line where this machine's mode is weaker than separate users (one user): the
    guarantee that does not hold. None where sandboxes have a separate root."""
    if isolation() is not Isolation.ONE_USER:
        return None
    return (
        f"isolation {Isolation.ONE_USER}: graders and the agent's code are one uid, so a "
        "grader that runs that code in its own process (ResearchCodeBench's tests) or "
        "outside LABCOAT_AS_AGENT's nested sandbox shares its files and processes with it "
        "(`labcoat check` says why this mode, and what gives separate users)"
    )


def _one_user_cause() -> str:
    """Why an ordinary user's sandboxes have one user: no usable subordinate range, or a
    setting that asks for the mode where the range would give separate users."""
    problem = mapping_problem()
    if problem is not None:
        return problem
    asked = (
        f"{MODE_ENV}=one-user"
        if os.environ.get(MODE_ENV, "auto") not in ("", "auto")
        else "LABCOAT_SANDBOX_USERNS=1"
    )
    return f"{asked} chose this mode; this user's subordinate range gives separate users without it"


def _cgroup_remedy() -> str:
    """What gives a sample's processes a cgroup here, for this machine's cgroup version."""
    if os.environ.get("LABCOAT_SANDBOX_CGROUPS", "1") == "0":
        return "LABCOAT_SANDBOX_CGROUPS=0 turned cgroups off: unset it"
    version = cgroup_version()
    if version == "v2":
        return (
            "a cgroup labcoat may write gives them back (root, or a delegated cgroup v2: "
            "`systemd-run --user --scope -p Delegate=yes labcoat ...`)"
        )
    if version == "v1":
        user = cgroup_user()
        return (
            "this machine's cgroups are v1, where only root makes cgroups unless root gives "
            f"a user a cgroup of its own: run labcoat as root, or as root `cgcreate -a {user} "
            f"-t {user} -g memory,pids:labcoat-{user}` (Debian's cgroup-tools) and then, as "
            f"{user}, `cgexec -g memory,pids:labcoat-{user} labcoat ...`"
        )
    return "no cgroup hierarchy with the memory and pids controllers is mounted at /sys/fs/cgroup"


@functools.cache
def overlay_problem() -> str | None:
    """Why a sample's private overlays of the shared trees fall back to binds here (the
    launcher's own words), or None where they mount."""
    with tempfile.TemporaryDirectory(prefix="labcoat-overlay-probe-") as folder:
        staging, tree = Path(folder, "staging"), Path(folder, "tree")
        staging.mkdir()
        tree.mkdir()
        argv = [sys.executable, "-I", "-S", _trees_exec.__file__, str(staging), "0", str(tree)]
        try:
            done = subprocess.run([*argv, "--", "true"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as ex:
            return str(ex)
    said = done.stderr.strip()
    if done.returncode != 0:
        return said or f"exit {done.returncode}"
    return said.removeprefix("labcoat trees: ") or None


@functools.cache
def namespaces_refused() -> str | None:
    """Why no sandbox can start here, in one line with the remedy (None: they can). Only
    root runs without a user namespace; anyone else needs one."""
    if os.geteuid() == 0 and isolation() is Isolation.ROOT:
        return None
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None  # said elsewhere, with how to install it
    try:
        done = subprocess.run(
            [bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"user namespaces could not be tried: {ex}; {REFUSED_REMEDY}"
    if done.returncode == 0:
        return None
    said = (done.stderr.strip().splitlines() or ["no reason given"])[-1].removeprefix("bwrap: ")
    return f"user namespaces are refused here ({said}): {_refusal_cause()}; {REFUSED_REMEDY}"


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


def _refusal_cause() -> str:
    """The setting that refuses them, and how to allow them."""
    if _sysctl("user.max_user_namespaces") == "0":
        return "user.max_user_namespaces is 0 (as root: `sysctl -w user.max_user_namespaces=15000`)"
    if _sysctl("kernel.unprivileged_userns_clone") == "0":
        return (
            "kernel.unprivileged_userns_clone is 0 "
            "(as root: `sysctl -w kernel.unprivileged_userns_clone=1`)"
        )
    if _sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
        return (
            "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and later): give "
            "bwrap a profile that allows them (/etc/apparmor.d/bwrap with `userns,`), or as "
            "root `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
        )
    return (
        "no sysctl refuses them, so a container's seccomp profile likely does (start the "
        "container with `--security-opt seccomp=unconfined` or a profile allowing clone "
        "with CLONE_NEWUSER)"
    )


def require_sandboxes() -> None:
    """Stop, in one line naming the cause and the remedy, where no sandbox can start
    (before anything of a run starts, so nothing is left half-done)."""
    from labcoat._errors import LabcoatError

    isolation()  # a mode asked for that cannot be had says why
    # in a container, the permission it withholds (as root too), with its remedies
    refused = container_refused() or namespaces_refused()
    if refused is not None:
        raise LabcoatError(refused)

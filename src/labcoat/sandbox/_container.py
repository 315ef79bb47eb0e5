"""Inside a container: what says labcoat runs in one, and, for each permission bwrap needs
that the container withholds, one line naming it with its Docker and Kubernetes remedy.

A container runtime's defaults refuse a namespace sandbox in layers, each hidden behind
the one before it (issue 47's table): the seccomp profile refuses `clone`/`unshare` of
namespaces; then the masked /proc paths (files the runtime mounts over, /proc/kcore ...)
make the kernel refuse the sandbox a fresh /proc, as does an AppArmor profile that denies
mounts; no user namespaces refuse every rootless mode; a cgroup v2 that is not delegated
leaves only per-process limits. The probes are facts gathered once (`probe_facts`) and
judged by a pure function (`missing_permissions`), so each configuration is testable
without a container. What this cannot see: a refusal from a runtime it has no words for
is named by bwrap's own message, without a remedy.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from labcoat.sandbox._layout import Isolation, isolation
from labcoat.sandbox._limits import cgroup_version, limits_here

# Kubernetes refuses `procMount: Unmasked` unless the pod has a user namespace of its own.
_K8S_UNMASKED = "`securityContext.procMount: Unmasked` (with the pod's `hostUsers: false`)"
_NONE = ("none labcoat knows (bwrap's words name the refusal)",) * 2
_CGROUP_MARKERS = ("docker", "kubepods", "containerd", "libpod", "crio", "lxc")


@dataclass(frozen=True)
class ContainerFacts:
    """What the probes found (each field a probe `missing_permissions` judges)."""

    signal: str | None
    """What says this runs in a container (`/.dockerenv`, ...), None when nothing does."""
    root: bool
    namespaces: str | None = None
    """bwrap's refusal to create the sandbox's namespaces; None when it made them."""
    proc_mount: str | None = None
    """bwrap's refusal to mount a fresh /proc in them; None when it mounted one."""
    masked: tuple[str, ...] = ()
    """The /proc paths something is mounted over (the runtime's masked and read-only paths)."""
    apparmor: str | None = None
    """The AppArmor profile enforced on this process (`docker-default (enforce)`), if any."""
    seccomp: bool = False
    """Whether a seccomp filter applies to this process (`Seccomp: 2` in /proc/self/status)."""
    max_user_namespaces: str | None = None
    limits: str = ""
    """`limits_here()`'s words: a cgroup, or rlimits and why."""
    cgroup: str | None = None
    """`cgroup_version()`: v1, v2 or None."""


@dataclass(frozen=True)
class Missing:
    """One permission the container withholds and how each runtime gives it."""

    kind: str
    """`seccomp`, `capability`, `systempaths`, `apparmor`, `userns`, `cgroup` or `unknown`."""
    what: str
    docker: str
    kubernetes: str
    fatal: bool = True
    """No sandbox starts without it (else a guarantee is weaker)."""

    def line(self) -> str:
        return f"{self.what} — Docker: {self.docker}; Kubernetes: {self.kubernetes}"


def missing_permissions(facts: ContainerFacts) -> list[Missing]:
    """Each permission bwrap needs that this container withholds, the fatal ones first;
    nothing outside a container (the host's own refusals are `namespaces_refused`'s)."""
    if facts.signal is None:
        return []
    found: list[Missing] = []
    if facts.namespaces is not None:
        found.append(_namespaces_missing(facts))
    elif facts.proc_mount is not None:
        said = f"bwrap: {facts.proc_mount}"
        if facts.masked:
            shown = ", ".join(facts.masked[:3]) + (", ..." if len(facts.masked) > 3 else "")
            found.append(
                Missing(
                    "systempaths",
                    f"masked /proc paths ({shown}): the kernel refuses the sandbox a fresh "
                    f"/proc ({said})",
                    "`--security-opt systempaths=unconfined`",
                    _K8S_UNMASKED,
                )
            )
        if facts.apparmor is not None:
            found.append(
                Missing(
                    "apparmor",
                    f"AppArmor profile {facts.apparmor} refuses mounts ({said})",
                    "`--security-opt apparmor=unconfined`",
                    "`securityContext.appArmorProfile.type: Unconfined`",
                )
            )
        if not found:
            found.append(
                Missing("unknown", f"the sandbox's /proc cannot be mounted ({said})", *_NONE)
            )
    if facts.cgroup == "v2" and facts.limits.startswith("rlimits"):
        found.append(
            Missing(
                "cgroup",
                "cgroup v2 without delegation: a sample's memory and process limits hold "
                "per process, not for its processes together (the container's own limits "
                "still bound all samples)",
                "a cgroup labcoat may write (`--cgroupns=private` and /sys/fs/cgroup "
                "mounted read-write; not measured here)",
                "none in the pod spec (no field delegates a cgroup); `resources.limits` "
                "bound the pod as a whole",
                fatal=False,
            )
        )
    return found


def _namespaces_missing(facts: ContainerFacts) -> Missing:
    said = f"bwrap: {facts.namespaces}"
    if facts.max_user_namespaces == "0":
        return Missing(
            "userns",
            f"user namespaces are refused here: user.max_user_namespaces is 0 ({said})",
            "as root on the host, `sysctl -w user.max_user_namespaces=15000` (a container "
            "without a user namespace of its own has the host's value)",
            "as root on the node, the same sysctl (no pod field sets it)",
        )
    if facts.root and "loopback" in said:
        return Missing(
            "capability",
            f"root's sandbox sets up its own loopback, which needs CAP_NET_ADMIN ({said})",
            "`--cap-add NET_ADMIN` (or run labcoat as an ordinary user: one user needs "
            "no capability)",
            "`securityContext.capabilities.add: [NET_ADMIN]` (or `runAsUser` of a user "
            "without a subordinate range)",
        )
    if facts.seccomp:
        return Missing(
            "seccomp",
            f"the seccomp profile refuses unshare/clone of namespaces ({said})",
            "`--security-opt seccomp=unconfined` (or a profile allowing clone and unshare "
            "with CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID ...)",
            "`securityContext.seccompProfile.type: Unconfined` (or `Localhost` with such a "
            "profile)",
        )
    if facts.root and "Operation not permitted" in said:
        return Missing(
            "capability",
            f"root's sandbox makes its mount namespace without a user namespace, which needs "
            f"CAP_SYS_ADMIN ({said})",
            "`--cap-add SYS_ADMIN` (or run labcoat as an ordinary user: one user needs no "
            "capability)",
            "`securityContext.capabilities.add: [SYS_ADMIN]` (or `runAsUser` of a user "
            "without a subordinate range)",
        )
    return Missing(
        "unknown",
        f"the sandbox's namespaces cannot be created ({said}); no seccomp filter is the cause",
        *_NONE,
    )


def container_signal(root: Path = Path("/"), environ: dict[str, str] | None = None) -> str | None:
    """The first of the robust signals that says this process runs in a container."""
    environ = dict(os.environ) if environ is None else environ
    if "KUBERNETES_SERVICE_HOST" in environ:
        return "a Kubernetes pod (KUBERNETES_SERVICE_HOST)"
    for marker in (".dockerenv", "run/.containerenv"):
        if (root / marker).exists():
            return f"a container (/{marker})"
    cgroups = _read(root / "proc/1/cgroup")
    for marker in _CGROUP_MARKERS:
        if marker in cgroups:
            return f"a container ({marker} in /proc/1/cgroup)"
    if environ.get("container"):  # systemd's convention, set by podman and LXC
        return f"a container (container={environ['container']})"
    return None


def masked_proc_paths(mountinfo: str) -> tuple[str, ...]:
    """The mount points below /proc in a mountinfo text (what masks or guards /proc)."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4].startswith("/proc/"):
            points.append(fields[4])
    return tuple(dict.fromkeys(points))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _apparmor_profile() -> str | None:
    said = _read(Path("/proc/self/attr/apparmor/current")).strip().rstrip("\0")
    if not said or said == "unconfined" or "(unconfined)" in said:
        return None
    return said


def _seccomp_filtered() -> bool:
    for line in _read(Path("/proc/self/status")).splitlines():
        if line.startswith("Seccomp:"):
            return line.split()[-1] != "0"
    return False


def _try_bwrap() -> tuple[str | None, str | None]:
    """(the namespaces' refusal, the /proc mount's refusal) of bwrap as this machine's
    mode uses it: every namespace (a user namespace but in root's mode), a fresh /proc."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, None  # said elsewhere, with how to install it
    # root's mode makes no user namespace (`--unshare-all` would try one, and a fresh /proc
    # in a user namespace needs unmasked paths that root's sandbox does not)
    spaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    if isolation() is not Isolation.ROOT:
        spaces.insert(0, "--unshare-user")
    argv = [bwrap, *spaces, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    try:
        done = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"could not be tried: {ex}", None
    if done.returncode == 0:
        return None, None
    said = (done.stderr.strip().splitlines() or ["no reason given"])[-1].removeprefix("bwrap: ")
    if "mount proc" in said or "proc on" in said:
        return None, said
    return said, None


def probe_facts() -> ContainerFacts:
    """This process's facts; outside a container only the signal (nothing is tried)."""
    signal = container_signal()
    root = os.geteuid() == 0
    if signal is None:
        return ContainerFacts(signal=None, root=root)
    namespaces, proc_mount = _try_bwrap()
    version = cgroup_version()
    return ContainerFacts(
        signal=signal,
        root=root,
        namespaces=namespaces,
        proc_mount=proc_mount,
        masked=masked_proc_paths(_read(Path("/proc/self/mountinfo"))),
        apparmor=_apparmor_profile(),
        seccomp=_seccomp_filtered(),
        max_user_namespaces=_read(Path("/proc/sys/user/max_user_namespaces")).strip() or None,
        limits=limits_here() if version == "v2" else "",
        cgroup=version,
    )


@functools.cache
def missing_here() -> tuple[Missing, ...]:
    """This container's missing permissions, probed once (a bwrap started and ended)."""
    return tuple(missing_permissions(probe_facts()))


def container_refused() -> str | None:
    """One line where this container keeps every sandbox from starting: the first
    missing permission and its remedies (`labcoat check` names each); None otherwise,
    and for the user-namespace sysctl, which `namespaces_refused` names as on any host."""
    fatal = [m for m in missing_here() if m.fatal]
    if fatal and fatal[0].kind == "userns":
        return None
    if not fatal:
        return None
    more = f" (and {len(fatal) - 1} more: `labcoat check` names each)" if len(fatal) > 1 else ""
    return f"no sandbox can start in this container: {fatal[0].line()}{more}"

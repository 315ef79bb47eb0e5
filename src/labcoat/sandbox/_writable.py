"""Every place agent code can write, and every file its uid owns, in each kind of sandbox
and each isolation mode: declared here, held by tests/sandbox/test_writable_places.py
(which walks each sandbox as the agent user and compares with these lists exactly) and
described in docs/sandbox.md (Writable places).

A grader that runs agent code more than once (a learner task by task, a solution timed
again) must scrub, between runs, everything the agent user can write in its sandbox: what
is declared here is that list. A place that opens without a line here fails the test.

Paths: `P` is the path itself; `P/**` is `P` and everything under it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from labcoat.sandbox._paths import AGENT_HOME


class SandboxKind(StrEnum):
    AGENT = "agent"
    """The agent's own sandbox (the sample's; the agent's commands, its background jobs)."""
    SCORE = "score"
    """A score tool's (RE-Bench's operations, `intermediate_score` and `score`): the agent's
    home bound writable, the sample's /root and /protected; agent code as the agent user."""
    GRADER = "grader"
    """A grader's (ResearchGym's, ResearchCodeBench's): the workspace read-only under
    /root; code run there as the agent user (with one user: the grader's own uid, as a
    ResearchCodeBench test module that imports the completion)."""
    REPRODUCTION = "reproduction"
    """PaperBench's `reproduce.sh`: a copy of the submission bound writable, as the agent."""
    NESTED = "nested"
    """Agent code a grader runs as labcoat's bundled graders do (`agent_code.run`): as the
    agent user where there is a root apart from it; with one user, in the sandbox nested
    in the grader's (LABCOAT_AS_AGENT), writable only where the grader grants."""


@dataclass(frozen=True)
class Places:
    writable: tuple[str, ...]
    owned: tuple[str, ...] | None
    """None where the mode has one user: it owns every file the harness made (the
    sandbox's, the host's it can see); what keeps agent code apart there is `writable`."""
    owned_maybe: tuple[str, ...] = ()
    """Owned where the harness's own user owns its installation (a checkout, a Python in
    its home), on read-only mounts: neither required nor refused."""


NESTED_GRANTED = "/tmp/labcoat-grade/home"
"""The folder the test's grader grants nested agent code (the bundled graders' scratch)."""

DEVICES = (
    "/dev/full",
    "/dev/null",
    "/dev/pts/ptmx",
    "/dev/random",
    "/dev/tty",
    "/dev/urandom",
    "/dev/zero",
)
"""Device nodes every sandbox has, writable by all: they keep nothing."""

KERNEL = (
    "/proc/pressure/cpu",
    "/proc/pressure/io",
    "/proc/pressure/memory",
    "/proc/sys/kernel/ns_last_pid",
)
"""Kernel files writable by all that keep nothing a later process can read back: pressure
triggers (one per open file, gone with it) and the sandbox's own pid namespace's last pid
(writing it needs CAP_CHECKPOINT_RESTORE there)."""

OWN_NAMESPACES = (
    "/proc/sys/fs/mqueue/msg_default",
    "/proc/sys/fs/mqueue/msg_max",
    "/proc/sys/fs/mqueue/msgsize_default",
    "/proc/sys/fs/mqueue/msgsize_max",
    "/proc/sys/fs/mqueue/queues_max",
    "/proc/sys/kernel/auto_msgmni",
    "/proc/sys/kernel/msgmax",
    "/proc/sys/kernel/msgmnb",
    "/proc/sys/kernel/msgmni",
    "/proc/sys/kernel/pid_max",
    "/proc/sys/kernel/sem",
    "/proc/sys/kernel/shm_rmid_forced",
    "/proc/sys/kernel/shmall",
    "/proc/sys/kernel/shmmax",
    "/proc/sys/kernel/shmmni",
)
"""With one user, the limits of the sandbox's own IPC and pid namespaces, which its user
namespace owns: a few numbers that end with the sandbox (nested agent code has
namespaces of its own)."""

SCRATCH = ("/dev/mqueue/**", "/dev/shm/**", "/tmp/**")
"""The sandbox's own: its IPC namespace's message queues, shared memory (capped at half
its memory) and /tmp (sticky: a user's files are its own)."""

PROXY_SOCKET = "/run/labcoat/proxy.sock"
"""The filtering proxy's socket, where the sandbox has network: one may connect, on a
read-only bind (neither replaced nor removed); /run/labcoat itself is the sandbox root's."""

HARNESS_FILES = (
    "/etc/group",
    "/etc/hostname",
    "/etc/hosts",
    "/etc/passwd",
    "/etc/profile",
    "/etc/profile.d/**",
    "/opt/labcoat/env/**",
)
"""Rootless with separate users, what the harness wrote for the sandbox is the agent's uid
there (the harness is): its identity files and login profile, and the task's environment
(built as the agent). All on read-only mounts: owning them changes nothing (chmod, utime,
xattrs and unlink all fail there)."""

INSTALLATION = (
    "/opt/labcoat/agent-jail.py",
    "/opt/labcoat/exec_server.py",
    "/opt/labcoat/python/**",
)
"""labcoat's own files bound into the sandbox, read-only: the agent's uid rootless where
the harness's user owns the installation (a checkout, a Python in its home)."""

SAMPLE_UUID = "/run/sample_uuid"
"""RE-Bench's sample uuid in a score tool's sandbox (the sample's state, written by the
harness), bound read-only."""


def declared_places(kind: SandboxKind, mode: str, *, network: bool) -> Places:
    """What agent code may write and own in a sandbox of `kind` in isolation `mode`
    (`Isolation`'s values), with or without the filtering proxy (`network`)."""
    home = (f"{AGENT_HOME}/**",)
    proxy = (PROXY_SOCKET,) if network else ()
    if mode != "rootless-one-user":
        owned: tuple[str, ...] = home
        if mode == "rootless-separate-users":
            owned += HARNESS_FILES + ((SAMPLE_UUID,) if kind is SandboxKind.SCORE else ())
        if kind is SandboxKind.NESTED:  # /tmp holds the grader's scratch, root's folder
            granted = (f"{NESTED_GRANTED}/**",)
            return Places(
                _sorted(DEVICES, KERNEL, SCRATCH, home, granted, proxy),
                _sorted(owned, granted),
                INSTALLATION,
            )
        return Places(_sorted(DEVICES, KERNEL, SCRATCH, home, proxy), _sorted(owned), INSTALLATION)
    # one user: its own ptys, /run (1 MiB) and /root; a grader's protected files and a
    # score tool's /root and /protected; nested agent code only what the grader grants
    devices = (*DEVICES, "/dev/pts/**")
    if kind is SandboxKind.NESTED:
        granted = (f"{NESTED_GRANTED}/**",)
        return Places(_sorted(devices, KERNEL, SCRATCH[:2], granted), None)
    extra: tuple[str, ...] = ("/root/**", "/run/**")
    if kind is SandboxKind.SCORE:
        extra += ("/protected/**",)
    return Places(_sorted(devices, KERNEL, OWN_NAMESPACES, SCRATCH, home, extra, proxy), None)


def _sorted(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({path for group in groups for path in group}))


def _covers(pattern: str, path: str) -> bool:
    """Whether `pattern` covers `path` (either may be a `P/**`)."""
    if not pattern.endswith("/**"):
        return pattern == path
    base = pattern[:-3] or "/"
    inner = (path[:-3] if path.endswith("/**") else path) or "/"
    return inner == base or inner.startswith(base.rstrip("/") + "/")


def undeclared(found: list[str], declared: tuple[str, ...]) -> list[str]:
    """What was found that nothing declared covers."""
    return [path for path in found if not any(_covers(p, path) for p in declared)]


def absent(declared: tuple[str, ...], found: list[str]) -> list[str]:
    """What was declared and not found: `P` must be found; `P/**` needs `P` itself found
    (what is under it may be less: a read-only bind inside, a grader's root-only folder)."""
    missing = []
    for pattern in declared:
        base = (pattern[:-3] or "/") if pattern.endswith("/**") else pattern
        if not any(_covers(f, base) or f == pattern for f in found):
            missing.append(pattern)
    return missing

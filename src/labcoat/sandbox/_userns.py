"""Separate users without root: a user namespace that maps the caller's subordinate ids.

An ordinary user with a range in /etc/subuid and /etc/subgid (as `useradd` gives on
Debian and Ubuntu, and as rootless Podman uses) may map that range into a user namespace
through the setuid helpers `newuidmap`/`newgidmap`. labcoat maps:

    inside            outside
    0 .. 999          the range's first 1000 ids (root, the `protected` group, ...)
    1000 (agent)      the caller's own id
    1001 ..           the rest of the range

so the agent's files on the host are the caller's (the harness reads and removes them as
in one-user mode), while the sandbox's root is an id of its own that the agent's code
cannot be: root-only files stay root's, and the agent cannot signal root's processes.
The harness owns the namespace, so it can still signal and inspect everything in it.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from labcoat.sandbox import _userns_exec

AGENT_INSIDE = 1000
LOW_IDS = 1000
"""Inside ids 0..999 (root, `protected` 999) come from the start of the range."""
SUBID_FILES = {"uid": Path("/etc/subuid"), "gid": Path("/etc/subgid")}
NAMESPACE_COMMAND_TIMEOUT = 600


@dataclass(frozen=True)
class IdRange:
    start: int
    count: int


def subordinate_range(kind: str, files: dict[str, Path] = SUBID_FILES) -> IdRange | None:
    """The caller's first subordinate range of `kind` ("uid" or "gid") large enough for
    the ids a sandbox uses (0..999 and the agent), or None."""
    uid = os.geteuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    try:
        lines = files[kind].read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        owner, _, rest = line.strip().partition(":")
        start, _, count = rest.partition(":")
        if owner not in (name, str(uid)) or not start.isdigit() or not count.isdigit():
            continue
        if int(count) >= LOW_IDS:
            return IdRange(int(start), int(count))
    return None


def id_map(own: int, sub: IdRange) -> str:
    """newuidmap's triples (inside, outside, count) for the mapping described above."""
    triples = [(0, sub.start, LOW_IDS), (AGENT_INSIDE, own, 1)]
    if sub.count > LOW_IDS:
        triples.append((AGENT_INSIDE + 1, sub.start + LOW_IDS, sub.count - LOW_IDS))
    return " ".join(f"{a} {b} {c}" for a, b, c in triples)


@dataclass(frozen=True)
class Mapping:
    uid: IdRange
    gid: IdRange

    def host_uid(self, inside: int) -> int:
        return _outside(inside, os.geteuid(), self.uid)

    def host_gid(self, inside: int) -> int:
        return _outside(inside, os.getegid(), self.gid)

    def launcher(self) -> list[str]:
        """argv prefix that runs a program as root of a fresh namespace with this map."""
        return [
            sys.executable,
            "-I",
            "-S",
            _userns_exec.__file__,
            id_map(os.geteuid(), self.uid),
            id_map(os.getegid(), self.gid),
            "--",
        ]


def _outside(inside: int, own: int, sub: IdRange) -> int:
    if inside == AGENT_INSIDE:
        return own
    if inside < LOW_IDS:
        return sub.start + inside
    return sub.start + inside - 1


def caller_mapping() -> Mapping | None:
    """The caller's subordinate ranges, when it has both (root needs none)."""
    if os.geteuid() == 0:
        return None
    uid, gid = subordinate_range("uid"), subordinate_range("gid")
    return Mapping(uid, gid) if uid and gid else None


@functools.cache
def mapping_problem() -> str | None:
    """Why the caller cannot run sandboxes with separate users (None: it can)."""
    if os.geteuid() == 0:
        return "root runs sandboxes with real separate users; no mapping is needed"
    user = _user_name()
    if caller_mapping() is None:
        return (
            f"no subordinate uid/gid range for {user} in /etc/subuid and /etc/subgid "
            f"(add one, e.g. `usermod --add-subuids 100000-165535 --add-subgids "
            f"100000-165535 {user}`)"
        )
    for tool in ("newuidmap", "newgidmap"):
        if shutil.which(tool) is None and not Path("/usr/bin", tool).exists():
            return f"{tool} is missing (install Debian's `uidmap` package)"
    try:
        run_as_namespace_root(["true"], timeout=30)
    except NamespaceCommandError as ex:
        return str(ex)
    return None


def _user_name() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


class NamespaceCommandError(RuntimeError):
    pass


def run_as_namespace_root(argv: list[str], timeout: float = NAMESPACE_COMMAND_TIMEOUT) -> str:
    """Run `argv` as root of a fresh mapped namespace (chown to a sandbox's users, remove
    what the sandbox's root left behind); its output, or NamespaceCommandError."""
    mapping = caller_mapping()
    if mapping is None:
        raise NamespaceCommandError("no subordinate uid/gid range to map")
    try:
        done = subprocess.run(
            [*mapping.launcher(), *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        raise NamespaceCommandError(f"{argv[0]} in a user namespace: {ex}") from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise NamespaceCommandError(detail.removeprefix("labcoat userns: "))
    return done.stdout

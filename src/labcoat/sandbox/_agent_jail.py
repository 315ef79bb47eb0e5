"""Run the agent's code, from a grader, in a sandbox nested in the grader's own.

    python -I -S agent-jail.py [--writable DIR]... -- COMMAND [ARGS...]

Where a grader's sandbox has one user (labcoat run by an ordinary user without a
subordinate id range), the agent's code that it runs (a learner, a solution being timed,
a test module) would otherwise have the grader's uid: it could read /root (held-out data,
tests, references, the scorer), write whatever the grader can, and signal the grader's
processes. Here it gets instead:

- a pid namespace of its own: it sees and signals none of the grader's processes, and
  everything it starts dies when it ends (no daemon outlives a run);
- the grader's tree read-only, without /root and /protected (empty in their place), and
  writable only where the grader says (`--writable`), plus a /dev/shm of its own;
- its own IPC and network namespaces (loopback only), no further user namespaces, and
  the grader's limits (rlimits, cgroup and seccomp filter are inherited).

labcoat sets LABCOAT_AS_AGENT in such grader sandboxes to the command line that runs
this file; graders prefix the agent's command with it. This file must import nothing
outside the standard library: it runs in the sandbox.
"""

from __future__ import annotations

import os
import shutil
import sys

HIDDEN = ("/root", "/protected")
"""The grader's own files: an empty folder in their place."""


def jail_argv(
    bwrap: str, writable: list[str], command: list[str], cwd: str, empty_fd: int
) -> list[str]:
    """bwrap's command line; `empty_fd` reads as an empty file (bwrap copies it)."""
    argv = [
        bwrap,
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(os.getuid()),
        "--gid",
        str(os.getgid()),
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        # every lock of the machine, with byte ranges: a channel between samples (the
        # grader's own /proc leaves it, since a masked /proc forbids mounting this one)
        "--ro-bind-data",
        str(empty_fd),
        "/proc/locks",
        "--dev-bind",  # the grader's devices (its GPUs among them), as they are
        "/dev",
        "/dev",
        "--tmpfs",
        "/dev/shm",
        "--mqueue",
        "/dev/mqueue",
    ]
    for path in HIDDEN:
        if os.path.isdir(path):
            argv += ["--tmpfs", path, "--remount-ro", path]
    for path in writable:
        argv += ["--bind", path, path]
    return [*argv, "--chdir", cwd, "--", *command]


def main() -> None:
    args = sys.argv[1:]
    writable: list[str] = []
    while args and args[0] == "--writable" and len(args) > 1:
        writable.append(os.path.realpath(args[1]))
        args = args[2:]
    if not args or args[0] != "--" or len(args) < 2:
        sys.stderr.write("usage: agent-jail.py [--writable DIR]... -- COMMAND [ARGS...]\n")
        sys.exit(2)
    bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
    cwd = os.getcwd()
    empty, writer = os.pipe()  # a device node would not open on /proc's nodev mount
    os.close(writer)
    os.set_inheritable(empty, True)
    os.execv(bwrap, jail_argv(bwrap, writable, args[1:], cwd, empty))


if __name__ == "__main__":
    main()

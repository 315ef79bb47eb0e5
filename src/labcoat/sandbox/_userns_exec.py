"""Run a program as root of a new user namespace that maps a subordinate id range.

    python -I -S _userns_exec.py UID_MAP GID_MAP -- PROGRAM ARGS...

Each map is newuidmap's triples ("inside outside count ..."), written for this process
by the setuid helpers `newuidmap`/`newgidmap` (shadow's `uidmap` package), which allow
only the caller's own id and the ranges /etc/subuid and /etc/subgid give it. The program
then runs with uid and gid 0 and every capability of the new namespace, as root does in
a rootless container: bwrap started so builds a sandbox with a real root and a real
agent user without the machine's root. The process keeps its pid (it execs), so a
parent that waits for it, signals it or lets it inherit descriptors sees the program.

This file must import nothing outside the standard library: it runs before labcoat's.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys

CLONE_NEWUSER = 0x10000000
EXIT_MAP_FAILED = 125


def _fail(message: str) -> None:
    sys.stderr.write(f"labcoat userns: {message}\n")
    sys.stderr.flush()
    os._exit(EXIT_MAP_FAILED)


def _write_maps(pid: int, uid_map: str, gid_map: str) -> None:
    """In a forked child, still in the parent namespace: map `pid`'s new namespace."""
    for tool, mapping in (("newuidmap", uid_map), ("newgidmap", gid_map)):
        path = shutil.which(tool) or f"/usr/bin/{tool}"
        child = os.fork()
        if child == 0:
            try:
                os.execv(path, [tool, str(pid), *mapping.split()])
            except OSError as ex:
                sys.stderr.write(f"labcoat userns: {tool}: {ex}\n")
            os._exit(127)
        _, status = os.waitpid(child, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            os._exit(1)
    os._exit(0)


def main() -> None:
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        _fail("usage: _userns_exec.py UID_MAP GID_MAP -- PROGRAM ARGS...")
    uid_map, gid_map, argv = sys.argv[1], sys.argv[2], sys.argv[4:]
    ready_read, ready_write = os.pipe()
    me = os.getpid()
    helper = os.fork()
    if helper == 0:
        os.close(ready_write)
        if os.read(ready_read, 1) != b"1":  # the parent could not unshare
            os._exit(1)
        _write_maps(me, uid_map, gid_map)
    os.close(ready_read)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER) != 0:
        error = ctypes.get_errno()
        os.write(ready_write, b"0")
        os.waitpid(helper, 0)
        _fail(f"could not create a user namespace: {os.strerror(error)} (errno {error})")
    os.write(ready_write, b"1")
    os.close(ready_write)
    _, status = os.waitpid(helper, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        _fail(f"newuidmap/newgidmap refused the maps (uid: {uid_map}; gid: {gid_map})")
    try:
        os.setresgid(0, 0, 0)
        os.setgroups([])
        os.setresuid(0, 0, 0)
    except OSError as ex:
        _fail(f"could not become the namespace's root: {ex}")
    try:
        os.execvp(argv[0], argv)
    except OSError as ex:
        _fail(f"{argv[0]}: {ex}")


if __name__ == "__main__":
    main()

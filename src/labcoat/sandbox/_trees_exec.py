"""Give a sandbox its own overlays of the read-only trees it shares, then run bwrap.

    python -I -S _trees_exec.py STAGING DEVICES TREE... [=FILE...] -- PROGRAM ARGS...

In a mount namespace of its own (and, run by an ordinary user, a user namespace that
maps that user to root), it mounts a small tmpfs at STAGING and under it, at STAGING/N,
a read-only overlayfs whose one real layer is the Nth TREE. A file seen through an
overlay is an inode of that overlay's own, and locks (flock, POSIX and OFD byte ranges)
and leases belong to the inode: two samples that see one host tree through overlays of
their own share none. Nothing is copied, and the page cache stays the host's, except
each =FILE: a file whose folder holds host mounts (no overlay of that folder can be
mounted rootless), copied to STAGING/copy-N, an inode of the sample's own.

Where the kernel refuses an overlay (rootless before Linux 5.11, a tree on a file system
overlayfs cannot stack on), that tree is bound as it is and stderr (the sample's
sandbox.log) says so. DEVICES=1 (labcoat run as root) also makes the sample's own
/dev/null, /dev/zero, ... at STAGING/dev, since locks on the host's nodes would be one
more channel. STAGING/nothing is an empty file, shown over /proc/locks. The mounts go
when the last process of the sandbox ends. The process keeps its pid (it execs).

This file must import nothing outside the standard library: it runs before labcoat's.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
COPY_MARK = "="
"""Before a host path (always absolute): a file to copy, not a tree to overlay."""
STAGING_BYTES = 1024 * 1024
"""The staging tmpfs's room besides the copies (mount points and an empty file)."""
EXIT_FAILED = 125

libc = ctypes.CDLL(None, use_errno=True)


def _fail(message: str) -> None:
    sys.stderr.write(f"labcoat trees: {message}\n")
    sys.stderr.flush()
    os._exit(EXIT_FAILED)


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str = "") -> int:
    """mount(2); 0, or the errno."""
    encoded = [None if v is None else v.encode() for v in (source, target, kind)]
    if libc.mount(*encoded, flags, data.encode() if data else None) == 0:
        return 0
    return ctypes.get_errno()


def _own_namespaces() -> None:
    """A mount namespace of our own, in which we may mount (as root, or as an ordinary
    user mapped to root of a new user namespace)."""
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWNS | (CLONE_NEWUSER if uid != 0 else 0)) != 0:
        _fail(f"could not create a mount namespace: {os.strerror(ctypes.get_errno())}")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"),
                           ("gid_map", f"0 {gid} 1")):  # fmt: skip
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    # nothing mounted here may reach the host's namespace
    error = _mount(None, "/", None, MS_REC | MS_PRIVATE)
    if error:
        _fail(f"could not make the mounts private: {os.strerror(error)}")


def _escape(path: str) -> str:
    """A path as overlayfs's lowerdir option takes it."""
    for char in ("\\", ":", ","):
        path = path.replace(char, "\\" + char)
    return path


def _trees(staging: str, trees: list[str]) -> None:
    empty = os.path.join(staging, "empty")  # overlayfs wants two layers without an upper
    os.mkdir(empty, 0o755)
    for index, tree in enumerate(trees):
        place = os.path.join(staging, str(index))
        os.mkdir(place, 0o755)
        layers = f"lowerdir={_escape(tree)}:{_escape(empty)}"
        error = _mount("labcoat", place, "overlay", MS_RDONLY | MS_NOSUID, layers)
        if error:
            sys.stderr.write(f"labcoat trees: {tree} is shared (overlay: {os.strerror(error)})\n")
            error = _mount(tree, place, None, MS_BIND | MS_REC)
            if error:
                _fail(f"could not bind {tree}: {os.strerror(error)}")


def copy_name(index: int) -> str:
    return f"copy-{index}"


def _copies(staging: str, files: list[str]) -> None:
    for index, path in enumerate(files):
        target = os.path.join(staging, copy_name(index))
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))
        try:
            with open(path, "rb") as source, open(target, "wb") as copy:
                copy.write(source.read())
            os.chmod(target, stat.S_IMODE(os.stat(path).st_mode) & 0o555)
        except OSError as ex:  # unreadable here: seen as it is, and the log says so
            sys.stderr.write(f"labcoat trees: {path} is shared (copy: {ex.strerror})\n")
            error = _mount(path, target, None, MS_BIND)
            if error:
                _fail(f"could not bind {path}: {os.strerror(error)}")


def _devices(staging: str) -> None:
    folder = os.path.join(staging, "dev")
    os.mkdir(folder, 0o755)
    for name in DEVICES:
        path = os.path.join(folder, name)
        os.mknod(path, 0o666 | stat.S_IFCHR, os.stat(f"/dev/{name}").st_rdev)
        os.chmod(path, 0o666)  # the umask took bits off


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) + 4096  # a page each, at least
    except OSError:
        return 0


def main() -> None:
    if len(sys.argv) < 4 or "--" not in sys.argv:
        _fail("usage: _trees_exec.py STAGING DEVICES TREE... -- PROGRAM ARGS...")
    split = sys.argv.index("--")
    staging, devices, given = sys.argv[1], sys.argv[2] == "1", sys.argv[3:split]
    trees = [t for t in given if not t.startswith(COPY_MARK)]
    files = [t[len(COPY_MARK) :] for t in given if t.startswith(COPY_MARK)]
    argv = sys.argv[split + 1 :]
    _own_namespaces()
    size = STAGING_BYTES + sum(_size(f) for f in files)
    error = _mount("labcoat-trees", staging, "tmpfs", MS_NOSUID, f"mode=0755,size={size}")
    if error:
        _fail(f"could not mount a tmpfs at {staging}: {os.strerror(error)}")
    try:
        _trees(staging, trees)
        _copies(staging, files)
        nothing = os.path.join(staging, "nothing")
        os.close(os.open(nothing, os.O_CREAT | os.O_WRONLY, 0o444))
        if devices:
            _devices(staging)
    except OSError as ex:
        _fail(str(ex))
    try:
        os.execvp(argv[0], argv)
    except OSError as ex:
        _fail(f"{argv[0]}: {ex}")


if __name__ == "__main__":
    main()

"""Senders and receivers of a token between two sandboxes, through what they share.

    python3 channel_probe.py ROLE TREE TOKEN

Run inside a sandbox (standard library only). A *holder* sets some state for each bit of
TOKEN that is 1 and holds it until the host writes `stop` into the working directory
(having said `ready`); a *prober* reads the other sample's state and prints the bits it
saw. A *watcher* sets watches, says `ready`, and after `stop` prints the bits it was told
of; a *toucher* opens and reads the files of TOKEN's 1 bits. Every receiver prints one
JSON line: {"bits": the token it received (0: nothing got through), "refused": the
errors its calls met}. Both sides pick the same BITS files and folders of TREE (sorted).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import signal
import struct
import sys
import time
from pathlib import Path

BITS = 16
STOP_AFTER_S = 60.0
F_OFD_GETLK, F_OFD_SETLK = 36, 37
LOCK = "hhqqi"  # struct flock: type, whence, start, len, pid
libc = ctypes.CDLL(None, use_errno=True)
refused: list[str] = []


def files(tree: str) -> list[str]:
    """The first BITS regular files of `tree` that this user can read (or the paths of a
    colon-separated list, when `tree` is one)."""
    if ":" in tree:
        return tree.split(":")
    found: list[str] = []
    for folder, dirs, names in os.walk(tree):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not os.path.islink(path) and os.path.isfile(path) and os.access(path, os.R_OK):
                found.append(path)
                if len(found) == BITS:
                    return found
    raise SystemExit(f"{tree} has fewer than {BITS} readable files")


def folders(tree: str) -> list[tuple[str, str]]:
    """The first BITS folders of `tree` with a readable file in them, and that file."""
    found: list[tuple[str, str]] = []
    for folder, dirs, names in os.walk(tree):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not os.path.islink(path) and os.path.isfile(path) and os.access(path, os.R_OK):
                found.append((folder, path))
                break
        if len(found) == BITS:
            return found
    raise SystemExit(f"{tree} has fewer than {BITS} folders with a readable file")


def ones(token: int) -> list[int]:
    return [bit for bit in range(BITS) if token >> bit & 1]


def wait_for_stop() -> None:
    Path("ready").write_text("1")
    deadline = time.monotonic() + STOP_AFTER_S
    while not Path("stop").exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def report(bits: int) -> None:
    print(json.dumps({"bits": bits, "refused": refused}))


def failed(call: str) -> None:
    refused.append(f"{call}: {errno.errorcode.get(ctypes.get_errno(), '?')}")


# --- holders and probers -------------------------------------------------------------


def flock_hold(tree: str, token: int) -> None:
    held = [open(files(tree)[bit], "rb") for bit in ones(token)]  # noqa: SIM115
    for handle in held:
        fcntl.flock(handle, fcntl.LOCK_SH)
    wait_for_stop()


def flock_probe(tree: str) -> None:
    bits = 0
    for bit, path in enumerate(files(tree)):
        with open(path, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                bits |= 1 << bit
    report(bits)


def _range_lock(handle: object, command: int, bit: int, kind: int) -> int:
    """fcntl's byte-range lock call on byte `bit`; the lock type it answers."""
    answer = fcntl.fcntl(handle, command, struct.pack(LOCK, kind, os.SEEK_SET, bit, 1, 0))
    return struct.unpack(LOCK, answer)[0]


def range_hold(tree: str, token: int, command: int) -> None:
    handle = open(files(tree)[0], "rb")  # noqa: SIM115 - held until stop
    for bit in ones(token):
        _range_lock(handle, command, bit, fcntl.F_RDLCK)
    wait_for_stop()


def range_probe(tree: str, command: int) -> None:
    bits = 0
    with open(files(tree)[0], "rb") as handle:
        for bit in range(BITS):
            if _range_lock(handle, command, bit, fcntl.F_WRLCK) != fcntl.F_UNLCK:
                bits |= 1 << bit
    report(bits)


def lease_hold(tree: str, token: int) -> None:
    held = [os.open(files(tree)[bit], os.O_RDONLY) for bit in ones(token)]
    wait_for_stop()
    for fd in held:
        os.close(fd)


def lease_probe(tree: str) -> None:
    """A write lease is refused (EAGAIN) while anyone else has the file open."""
    bits = 0
    for bit, path in enumerate(files(tree)):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        except OSError as ex:
            if ex.errno == errno.EAGAIN:
                bits |= 1 << bit
            else:
                refused.append(f"F_SETLEASE: {errno.errorcode.get(ex.errno or 0, '?')}")
        finally:
            os.close(fd)
    report(bits)


def proc_locks_hold(tree: str, token: int) -> None:
    """An open-file-description lock on a private file, at byte TOKEN: /proc/locks lists
    such locks with no pid, so a pid namespace does not hide them."""
    del tree
    handle = open("/tmp/labcoat-probe-lock", "wb")  # noqa: SIM115 - held until stop
    fcntl.fcntl(handle, F_OFD_SETLK, struct.pack(LOCK, fcntl.F_WRLCK, 0, token, 1, 0))
    wait_for_stop()


def proc_locks_probe(token: int) -> None:
    starts = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[1] == "OFDLCK":
            starts.add(int(fields[6]))
    report(token if token in starts else 0)


# --- watchers and the toucher --------------------------------------------------------


def inotify_watch(tree: str) -> None:
    IN_ACCESS, IN_OPEN, IN_NONBLOCK = 0x1, 0x20, 0o4000
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0:
        failed("inotify_init1")
        wait_for_stop()
        return report(0)
    watches = {}
    for bit, path in enumerate(files(tree)):
        wd = libc.inotify_add_watch(fd, path.encode(), IN_ACCESS | IN_OPEN)
        if wd < 0:
            failed("inotify_add_watch")
        watches[wd] = bit
    wait_for_stop()
    bits = 0
    try:
        data = os.read(fd, 65536)
    except BlockingIOError:
        data = b""
    while data:
        wd, _mask, _cookie, length = struct.unpack_from("iIII", data)
        bits |= 1 << watches[wd] if wd in watches else 0
        data = data[16 + length :]
    report(bits)


def fanotify_watch(tree: str) -> None:
    """One unprivileged fanotify group (FAN_REPORT_FID, since Linux 5.13) per bit."""
    FAN_REPORT_FID, FAN_NONBLOCK, FAN_MARK_ADD, FAN_OPEN, FAN_ACCESS = 0x200, 0x2, 1, 0x20, 0x1
    libc.fanotify_mark.argtypes = [
        ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p
    ]  # fmt: skip
    groups = {}
    for bit, path in enumerate(files(tree)):
        fd = libc.fanotify_init(FAN_REPORT_FID | FAN_NONBLOCK, os.O_RDONLY)
        if fd < 0:
            failed("fanotify_init")
            continue
        if libc.fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN | FAN_ACCESS, -100, path.encode()):
            failed("fanotify_mark")
        groups[bit] = fd
    wait_for_stop()
    bits = 0
    for bit, fd in groups.items():
        with contextlib.suppress(BlockingIOError):
            bits |= 1 << bit if os.read(fd, 65536) else 0
    report(bits)


def dnotify_watch(tree: str) -> None:
    """F_NOTIFY on a folder, with a real-time signal of its own per bit."""
    signals = [signal.SIGRTMIN + bit for bit in range(BITS)]
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    held = []
    for bit, (folder, _) in enumerate(folders(tree)):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        held.append(fd)
        try:
            fcntl.fcntl(fd, fcntl.F_SETSIG, signals[bit])
            fcntl.fcntl(fd, fcntl.F_NOTIFY, fcntl.DN_ACCESS | fcntl.DN_MULTISHOT - (1 << 32))
        except OSError as ex:
            refused.append(f"F_NOTIFY: {errno.errorcode.get(ex.errno or 0, '?')}")
    wait_for_stop()
    pending = signal.sigpending()
    report(sum(1 << bit for bit, number in enumerate(signals) if number in pending))


def touch(tree: str, token: int, kind: str) -> None:
    paths = [path for _, path in folders(tree)] if kind == "folders" else files(tree)
    for bit in ones(token):
        with open(paths[bit], "rb") as handle:
            handle.read(1)
    print(json.dumps({"touched": ones(token)}))


def main() -> None:
    role, tree, token = sys.argv[1], sys.argv[2], int(sys.argv[3])
    holders = {
        "flock": lambda: flock_hold(tree, token),
        "posix": lambda: range_hold(tree, token, fcntl.F_SETLK),
        "ofd": lambda: range_hold(tree, token, F_OFD_SETLK),
        "lease": lambda: lease_hold(tree, token),
        "proc-locks": lambda: proc_locks_hold(tree, token),
    }
    probers = {
        "flock": lambda: flock_probe(tree),
        "posix": lambda: range_probe(tree, fcntl.F_GETLK),
        "ofd": lambda: range_probe(tree, F_OFD_GETLK),
        "lease": lambda: lease_probe(tree),
        "proc-locks": lambda: proc_locks_probe(token),
    }
    watchers = {
        "inotify": lambda: inotify_watch(tree),
        "fanotify": lambda: fanotify_watch(tree),
        "dnotify": lambda: dnotify_watch(tree),
    }
    kind, _, side = role.rpartition("-")
    if side == "hold":
        holders[kind]()
    elif side == "probe":
        probers[kind]()
    elif side == "watch":
        watchers[kind]()
    elif side == "touch":
        touch(tree, token, "folders" if kind == "dnotify" else "files")
    else:
        raise SystemExit(f"unknown role {role}")


if __name__ == "__main__":
    main()

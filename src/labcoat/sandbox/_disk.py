"""A disk quota for everything a sample can write: its home, /tmp and /root.

All of a sample's writable directories live in one folder, `SampleDirs.disk`, and the
quota covers them together. Three mechanisms, chosen by `LABCOAT_SANDBOX_DISK`:

- `loop` (as root, where loop devices exist): the folder is an ext4 file system in a
  sparse image file of the quota's size, mounted with `nodev,nosuid`. The kernel refuses
  a write past the quota (ENOSPC) like any full disk; the image holds only what was
  written, and deleted files are given back to the host (`discard`).
- `fuse` (anyone else, where FUSE is usable): the same ext4 image, served by `fuse2fs`
  and mounted by the user through `fusermount3`. Its blocks beyond the quota are
  reserved (only the machine's root may use them), so a sample's files together never
  take more than the quota: a write past it fails with ENOSPC. Where the sandbox has a
  root apart from the caller (rootless with separate users), that root is another uid,
  which FUSE lets in only with `allow_other`, and so only where /etc/fuse.conf has
  `user_allow_other`.
- `watch` (anyone): the folder is a plain directory; a watcher measures it (allocated
  blocks, hard links once) and, when it is over the quota, stops every process of the
  sample but its exec servers, and again whenever usage grows while over it (commands
  that delete files can run). Commands also get RLIMIT_FSIZE no larger than the quota,
  so no single file outgrows it.
  Overshoot is bounded by what a sample writes between two checks.

`auto` (the default) takes `loop` as root and `fuse` otherwise, where they work here, and
`watch` else; `off` turns the quota off. `BwrapSession.disk.mechanism` records which one
a sample got.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from labcoat._util.env import env_value

logger = logging.getLogger(__name__)

DISK_ENV = "LABCOAT_SANDBOX_DISK"
MECHANISMS = ("auto", "loop", "fuse", "watch", "off")
FUSE_CONF = Path("/etc/fuse.conf")
NOBODY = 65534
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")
# ext4 keeps some of an image for itself (inode tables, bitmaps): give it room beyond
# the quota, so that at least the quota is usable
_EXT4_SPARE = 0.04
_EXT4_SPARE_MB = 8
_BYTES_PER_INODE = 16384
_WATCH_MIN_INTERVAL = 0.1
_WATCH_MAX_INTERVAL = 5.0
_WATCH_GROWTH = 1024 * 1024
_broken: dict[str, str] = {}
"""Why loop or FUSE images failed on this machine (remembered: the next samples watch)."""


def disk_mode() -> str:
    return str(env_value(DISK_ENV, "auto"))  # one of MECHANISMS


def allocated_bytes(root: Path) -> int:
    """Bytes allocated under `root` (sparse files by their blocks, hard links once)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    stack = [str(root)]
    while stack:
        path = stack.pop()
        with contextlib.suppress(OSError), os.scandir(path) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    key = (info.st_dev, info.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                    total += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
    return total


@dataclass
class SampleDisk:
    """The folder behind a sample's writable paths and the quota on it."""

    path: Path
    limit_bytes: int | None
    mechanism: str
    """`loop (ext4 image)`, `fuse (ext4 image)`, `watch` or `none`."""
    image: Path | None = None
    exceeded: list[dict] = field(default_factory=list)
    """When the watcher stopped the sample's processes: time, used and limit in bytes."""
    last_used: int = 0
    """The watcher's latest measurement (watch mechanism)."""
    overhead: int = 0
    """An image's own blocks (inode tables, the root folder) when it was new: not the
    sample's."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def used_bytes(self) -> int:
        """Bytes in use now (a walk of the folder unless it is an image: cheap there)."""
        if self.image is not None:
            with contextlib.suppress(OSError):
                return max(0, _image_used(self.path) - self.overhead)
        return allocated_bytes(self.path)

    def full(self) -> bool:
        """Whether the quota is (nearly) used up, by the cheapest measurement at hand."""
        if self.limit_bytes is None:
            return False
        used = self.used_bytes() if self.image is not None else self.last_used
        return used >= 0.98 * self.limit_bytes

    def watch(self, on_exceeded: Callable[[int], None]) -> None:
        """Start the watcher (watch mechanism only): `on_exceeded(used)` when over."""
        if self.mechanism != "watch" or self.limit_bytes is None or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._watch, args=(on_exceeded,), name="labcoat-disk-watch", daemon=True
        )
        self._thread.start()

    def _watch(self, on_exceeded: Callable[[int], None]) -> None:
        interval = _WATCH_MIN_INTERVAL
        floor: int | None = None  # usage at the last stop, lowered as files are deleted
        while not self._stop.wait(interval):
            started = time.monotonic()
            used = allocated_bytes(self.path)
            self.last_used = used
            took = time.monotonic() - started
            # a big tree costs time to walk: check less often rather than burn a core
            interval = min(_WATCH_MAX_INTERVAL, max(_WATCH_MIN_INTERVAL, 10 * took))
            if self.limit_bytes is None or used <= self.limit_bytes:
                floor = None
                continue
            # over the quota: stop the sample's processes, and again only while usage
            # still grows, so that commands that clean up can run
            if floor is None or used > floor + _WATCH_GROWTH:
                self.exceeded.append({"time": time.time(), "used": used, "limit": self.limit_bytes})
                with contextlib.suppress(Exception):
                    on_exceeded(used)
                floor = max(used, allocated_bytes(self.path))  # what landed before the stop
            else:
                floor = min(floor, used)

    def exceeded_since(self, moment: float) -> dict | None:
        return next((e for e in reversed(self.exceeded) if e["time"] >= moment), None)

    def release(self, keep: bool = False) -> None:
        """Stop watching; unmount an image (kept when `keep`, for debugging)."""
        self._stop.set()
        if self.image is None:
            return
        _unmount(self.path)
        if not keep:
            with contextlib.suppress(OSError):
                self.image.unlink()


def _tool(name: str) -> str | None:
    """A system tool's path: in PATH, or the sbin folders an ordinary user's PATH lacks
    (Debian's mkfs.ext4, tune2fs and dumpe2fs live in /usr/sbin)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), *_SBIN])
    return shutil.which(name, path=search)


def _run(args: list[str]) -> str | None:
    """None on success, else the command's complaint in one line."""
    args = [_tool(args[0]) or args[0], *args[1:]]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"{args[0]}: {ex}"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return f"{args[0]}: {lines[-1] if lines else f'exit {done.returncode}'}"


def mounts_under(folder: Path) -> list[Path]:
    """Mount points at or under `folder` (deepest first), from /proc/self/mountinfo."""
    base = os.path.realpath(folder)
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split(" ")
            if len(fields) < 5:
                continue
            # mountinfo escapes space, tab, newline and backslash as octal
            point = fields[4].encode().decode("unicode_escape")
            if point == base or point.startswith(base + "/"):
                found.append(Path(point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def release_mounts(folder: Path) -> None:
    """Unmount what a sample that died left mounted under `folder` (its disk image), so
    the folder can be removed; the loop device goes with the mount (autoclear)."""
    for point in mounts_under(folder):
        if not _unmount(point):
            logger.debug("could not unmount %s", point)


def _unmount(point: Path) -> bool:
    """Unmount a sample's image: root's way, else the user's own FUSE mount's."""
    fusermount = _tool("fusermount3") or _tool("fusermount") or "fusermount3"
    attempts = [["umount", str(point)], ["umount", "-l", str(point)]]
    if os.geteuid() != 0:
        attempts = [[fusermount, "-u", str(point)], [fusermount, "-u", "-z", str(point)]]
    return any(_run(args) is None for args in attempts)


def _image_used(path: Path) -> int:
    vfs = os.statvfs(path)
    return (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize


def _image_disk(path: Path, limit: int, mechanism: str, image: Path) -> SampleDisk:
    """The record of a mounted image, less what the file system itself takes."""
    with contextlib.suppress(OSError):
        (path / "lost+found").rmdir()
    return SampleDisk(path, limit, mechanism, image, overhead=_image_used(path))


def _reserve_past(image: Path, limit: int) -> str | None:
    """Reserve the image's free blocks beyond `limit`: the sample's files together never
    take more than the quota.
    None on success, else the complaint."""
    try:
        free, block = _ext4_free_bytes(image)
    except OSError as ex:
        return str(ex)
    reserved = max(0, -(-(free * block - limit) // block))
    # reserved for `nobody`, not root: a sandbox's root (and, with one user, an agent who
    # is the machine's root outside) lacks CAP_SYS_RESOURCE, and so stays under the quota
    owner = ["-u", str(NOBODY), "-g", str(NOBODY)]
    return _run(["tune2fs", "-r", str(reserved), *owner, str(image)])


def _mkfs_args(image: Path) -> list[str]:
    return [
        "mkfs.ext4", "-q", "-F", "-m", "0", "-i", str(_BYTES_PER_INODE),
        "-O", "^has_journal", "-E",
        f"root_owner={os.geteuid()}:{os.getegid()},lazy_itable_init=1,nodiscard",
        "-L", "labcoat", str(image),
    ]  # fmt: skip


def _image_file(root: Path, limit: int) -> Path:
    """A sparse file for an ext4 image with room for `limit` bytes of files."""
    image = root / "disk.img"
    size = int(limit * (1 + _EXT4_SPARE)) + _EXT4_SPARE_MB * 1024 * 1024
    with open(image, "wb") as f:
        f.truncate(size)
    return image


def _loop_disk(root: Path, limit: int) -> SampleDisk:
    """An ext4 image of about `limit` bytes mounted at root/disk; raises OSError."""
    for tool in ("mkfs.ext4", "dumpe2fs", "tune2fs", "mount", "umount"):
        if _tool(tool) is None:
            raise OSError(f"{tool} is not installed")
    path = root / "disk"
    path.mkdir()
    image = _image_file(root, limit)
    mount = ["mount", "-t", "ext4", "-o", "loop,nodev,nosuid,discard", str(image), str(path)]
    problem = _run(_mkfs_args(image)) or _reserve_past(image, limit) or _run(mount)
    if problem is not None:
        with contextlib.suppress(OSError):
            image.unlink()
        raise OSError(problem)
    return _image_disk(path, limit, "loop (ext4 image)", image)


def allow_other_permitted() -> bool:
    """Whether /etc/fuse.conf lets ordinary users mount with `allow_other`."""
    try:
        lines = FUSE_CONF.read_text().splitlines()
    except OSError:
        return False
    return any(line.split("#")[0].strip() == "user_allow_other" for line in lines)


def fuse_problem(other_ids: bool) -> str | None:
    """Why a FUSE image cannot hold a sample's quota for this user (None: it can).
    `other_ids`: the sandbox has users apart from the caller (a mapped root)."""
    for tool in ("mkfs.ext4", "dumpe2fs", "tune2fs", "fuse2fs"):
        if _tool(tool) is None:
            package = "fuse2fs" if tool == "fuse2fs" else "e2fsprogs"
            return f"{tool} is not installed (Debian's `{package}`)"
    if not (_tool("fusermount3") or _tool("fusermount")):
        return "fusermount3 is not installed (Debian's `fuse3`)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return (
            "/dev/fuse is not open to this user (udev makes it 0666 on a Debian "
            "machine; as root: `chmod 0666 /dev/fuse`)"
        )
    if other_ids and os.geteuid() != 0 and not allow_other_permitted():
        return (
            "the sandbox's root is another uid, which a user's FUSE mount lets in only with "
            f"`user_allow_other` in {FUSE_CONF} (as root: `echo user_allow_other >> {FUSE_CONF}`)"
        )
    return None


def _ext4_free_bytes(image: Path) -> tuple[int, int]:
    """(free blocks, block size) of an ext4 image, from its superblock."""
    dumpe2fs = _tool("dumpe2fs") or "dumpe2fs"
    done = subprocess.run([dumpe2fs, "-h", str(image)], capture_output=True, text=True)
    fields = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    try:
        return int(fields["Free blocks"]), int(fields["Block size"])
    except (KeyError, ValueError):
        raise OSError(f"dumpe2fs: no free block count in {image}") from None


def _fuse_disk(root: Path, limit: int, other_ids: bool) -> SampleDisk:
    """An ext4 image mounted at root/disk by the user through FUSE, its blocks past
    `limit` reserved (usable by the machine's root alone); raises OSError."""
    problem = fuse_problem(other_ids)
    if problem is not None:
        raise OSError(problem)
    path = root / "disk"
    path.mkdir()
    image = _image_file(root, limit)
    try:
        options = "fakeroot,default_permissions" + (",allow_other" if other_ids else "")
        problem = (
            _run(_mkfs_args(image))
            or _reserve_past(image, limit)
            or _run(["fuse2fs", str(image), str(path), "-o", options])
        )
        if problem is None and not os.path.ismount(path):  # fuse2fs exits 0 regardless
            problem = "fuse2fs: the image was not mounted"
        if problem is not None:
            raise OSError(problem)
    except OSError:
        if os.path.ismount(path):
            _unmount(path)
        with contextlib.suppress(OSError):
            image.unlink()
        raise
    return _image_disk(path, limit, "fuse (ext4 image)", image)


def create_disk(
    root: Path, disk_mb: int | None, other_ids: bool = False, fuse: bool = True
) -> SampleDisk:
    """The folder for a sample's writable paths, under `root`, with its quota
    (`other_ids`: the sandbox has users apart from the caller, a mapped root; `fuse`:
    whether a FUSE image may hold it)."""
    mode = disk_mode()
    if disk_mb is None or mode == "off":
        (root / "disk").mkdir()
        return SampleDisk(root / "disk", None, "none")
    limit = disk_mb * 1024 * 1024
    root_user = os.geteuid() == 0
    images: list[tuple[str, bool, Callable[[], SampleDisk]]] = [
        ("loop", root_user, lambda: _loop_disk(root, limit)),
        ("fuse", fuse and not root_user, lambda: _fuse_disk(root, limit, other_ids)),
    ]
    for name, default_here, make in images:
        if mode != name and not (mode == "auto" and default_here and name not in _broken):
            continue
        try:
            return make()
        except OSError as ex:
            if mode == name:
                raise
            _broken[name] = str(ex)
            logger.warning(
                "disk quotas by %s image unavailable here (%s): watching instead", name, ex
            )
            shutil.rmtree(root / "disk", ignore_errors=True)
    (root / "disk").mkdir()
    return SampleDisk(root / "disk", limit, "watch")

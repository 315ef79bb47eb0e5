"""A content-addressed store of workspaces: blobs named by sha256, one manifest a sample.

Layout under a store root (`<log dir>/workspaces`):

    blobs/ab/cdef...        a file's bytes, named by their sha256 (written once)
    samples/<uuid>.json     one sample's manifest (path -> sha256, size, mode; links; ...)

Writes are atomic (a temporary file, then a rename), and a blob that exists is never
rewritten, so samples and epochs that share files share their bytes, and two samples
saving the same file at once cannot corrupt it. Pure file work: no Inspect, no sandbox.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labcoat._util.atomic import atomic_write
from labcoat._util.content_hash import file_digest, sized_chunks

MANIFEST_VERSION = 1
BLOBS, SAMPLES = "blobs", "samples"
DEFAULT_EXCLUDE = ("__pycache__", ".venv", "*.pyc")
"""Left out of every kept workspace: rebuilt by the task's setup or by Python itself.
`.git` is kept: ResearchGym's grader records the workspace's git history, and a
repository's objects are files like any other (identical ones are stored once)."""


@dataclass(frozen=True)
class Caps:
    file_bytes: int
    """A file larger than this is kept by reference (path, size; never read)."""
    sample_bytes: int
    """Once a sample's kept bytes would pass this, its further files are kept by reference."""
    entries: int = 100_000
    """A workspace with more files, folders and links than this is not kept at all."""


class KeepStopped(Exception):
    """The walk stopped before the end (out of time, cancelled, too many entries): a
    manifest of part of a workspace would regrade something that was not graded."""


@dataclass
class Tree:
    """What a walk of a workspace kept: the manifest's body."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: dict[str, int] = field(default_factory=dict)
    hardlinks: dict[str, str] = field(default_factory=dict)
    """A further name of a file already walked (its path): restored as a hard link."""
    by_reference: dict[str, dict[str, Any]] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    kept_bytes: int = 0
    new_bytes: int = 0
    entries: int = 0
    inodes: dict[tuple[int, int], str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class _Limits:
    """When a walk must stop: checked before every entry and every chunk read."""

    caps: Caps
    deadline: float | None
    cancel: threading.Event | None

    def check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise KeepStopped("cancelled")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise KeepStopped("out of time")


def excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    """A pattern without `/` matches a file or folder of that name anywhere (as in
    .gitignore); one with `/` matches the path from the workspace's root."""
    name = rel.rsplit("/", 1)[-1]
    for pattern in patterns:
        target = rel if "/" in pattern.strip("/") else name
        if fnmatch.fnmatchcase(target, pattern.strip("/")):
            return True
    return False


def _open(path: Path) -> int:
    # no link followed, a FIFO put in its place cannot block
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)


def sha256_of(path: Path, size: int | None = None, limits: _Limits | None = None) -> str:
    """A blob's name: its bytes' digest, no link followed, `size` bytes exactly."""
    check = limits.check if limits is not None else None
    return file_digest(path, follow_links=False, size=size, check=check)


def blob_path(root: Path, sha: str) -> Path:
    return root / BLOBS / sha[:2] / sha[2:]


def manifest_path(root: Path, sample_uuid: str) -> Path:
    return root / SAMPLES / f"{sample_uuid}.json"


def _atomic_write(target: Path, write: Any) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # no fsync per file: a workspace is thousands of them, kept while its sample scores
    atomic_write(target, write, fsync=False)


def _store_blob(root: Path, source: Path, sha: str, size: int, limits: _Limits) -> bool:
    """Copy `source` in as blob `sha` unless it is there; whether bytes were written."""
    target = blob_path(root, sha)
    if target.exists():
        return False

    def copy(out: Any) -> None:
        digest = hashlib.sha256()
        fd = _open(source)
        try:
            for chunk in sized_chunks(fd, size, limits.check):
                digest.update(chunk)
                out.write(chunk)
        finally:
            os.close(fd)
        if digest.hexdigest() != sha:
            raise OSError("changed while kept")

    _atomic_write(target, copy)
    return True


def save_tree(
    source: Path,
    root: Path,
    caps: Caps,
    exclude: tuple[str, ...],
    *,
    deadline: float | None = None,
    cancel: threading.Event | None = None,
) -> Tree:
    """Walk `source` and keep it in the store at `root` (symlinks are recorded, never
    followed; sockets, FIFOs and unreadable files are named in `skipped`).

    Bounded whatever the workspace holds: a file is judged by its size before it is read
    (over a cap: kept by reference, never read), each inode is read once (a further hard
    link is recorded as a link), at most `caps.entries` entries are walked, and the walk
    stops (KeepStopped) at `deadline` (time.monotonic()) or when `cancel` is set.
    """
    tree = Tree()
    limits = _Limits(caps, deadline, cancel)
    _walk(source, tree, root, limits, exclude)
    return tree


def _listing(folder: Path, rel: str, tree: Tree, limits: _Limits) -> list[os.DirEntry[str]]:
    """The folder's entries, counted against the cap as they are read (a folder of a
    million names stops at the cap, not after listing them all)."""
    entries = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                tree.entries += 1
                if tree.entries > limits.caps.entries:
                    raise KeepStopped(f"more than {limits.caps.entries} entries")
                if tree.entries % 256 == 0:
                    limits.check()
                entries.append(entry)
    except OSError as ex:
        tree.skipped[rel or "."] = f"unreadable folder: {ex.strerror or ex}"
    return sorted(entries, key=lambda e: e.name)


def _walk(source: Path, tree: Tree, root: Path, limits: _Limits, exclude: tuple[str, ...]) -> None:
    folders = [(source, "")]  # a stack, not recursion: depth is the agent's to choose
    while folders:
        folder, prefix = folders.pop()
        limits.check()
        below = []
        for entry in _listing(folder, prefix.rstrip("/"), tree, limits):
            rel, path = prefix + entry.name, Path(entry.path)
            if excluded(rel, exclude):
                tree.excluded.append(rel)
            elif entry.is_dir(follow_symlinks=False):
                tree.dirs[rel] = stat.S_IMODE(path.lstat().st_mode)
                below.append((path, rel + "/"))
            else:
                _keep_file(tree, rel, path, root, limits)
        folders.extend(reversed(below))


def _keep_file(tree: Tree, rel: str, path: Path, root: Path, limits: _Limits) -> None:
    limits.check()
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        tree.links[rel] = os.readlink(path)
        return
    if not stat.S_ISREG(info.st_mode):
        tree.skipped[rel] = "not a regular file"
        return
    if info.st_nlink > 1:  # one read per inode, however many names it has
        first = tree.inodes.setdefault((info.st_dev, info.st_ino), rel)
        if first != rel:
            tree.hardlinks[rel] = first
            return
    caps, size = limits.caps, info.st_size
    # judged before any read; a sparse file's allocated blocks are on record beside it
    entry: dict[str, Any] = {"size": size, "mode": stat.S_IMODE(info.st_mode)}
    if size > caps.file_bytes:
        why = f"over the per-file cap ({caps.file_bytes} B)"
    elif tree.kept_bytes + size > caps.sample_bytes:
        why = f"over the per-sample cap ({caps.sample_bytes} B)"
    else:
        why = ""
    if why:
        tree.by_reference[rel] = {**entry, "allocated": info.st_blocks * 512, "why": why}
        return
    try:
        sha = sha256_of(path, size, limits)
        if _store_blob(root, path, sha, size, limits):
            tree.new_bytes += size
    except OSError as ex:
        tree.skipped[rel] = f"unreadable: {ex.strerror or ex}"
        return
    tree.kept_bytes += size
    tree.files[rel] = {"sha256": sha, **entry}


def write_manifest(root: Path, sample_uuid: str, manifest: dict[str, Any]) -> Path:
    target = manifest_path(root, sample_uuid)
    text = json.dumps({"version": MANIFEST_VERSION, **manifest}, indent=1, sort_keys=True)
    _atomic_write(target, text)
    return target


def read_manifest(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
        raise ValueError(f"{path}: not a labcoat workspace manifest (version {MANIFEST_VERSION})")
    return data


def materialize(manifest: dict[str, Any], root: Path, target: Path) -> list[str]:
    """Write the kept tree into `target` (an empty folder); the paths that could not be
    restored (kept by reference, or a blob gone missing)."""
    missing = sorted(manifest.get("by_reference") or {})
    for rel, mode in sorted((manifest.get("dirs") or {}).items()):
        (target / rel).mkdir(parents=True, exist_ok=True)
        os.chmod(target / rel, mode | 0o700)  # writable while filling; mode set below
    for rel, entry in sorted((manifest.get("files") or {}).items()):
        blob = blob_path(root, entry["sha256"])
        if not blob.is_file():
            missing.append(rel)
            continue
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(blob, path)
        os.chmod(path, entry["mode"])
    for rel, first in sorted((manifest.get("hardlinks") or {}).items()):
        if not (target / first).is_file():  # its first name was not restored either
            missing.append(rel)
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        os.link(target / first, target / rel)
    for rel, link in sorted((manifest.get("links") or {}).items()):
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link, target / rel)
    for rel, mode in sorted((manifest.get("dirs") or {}).items(), reverse=True):
        os.chmod(target / rel, mode | 0o700)  # the owner can always clean it up
    return sorted(missing)

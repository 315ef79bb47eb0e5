"""Content hashes of a task's files, for the provenance every score carries.

A task's hash covers its folder's files: their sorted relative paths and their bytes, a
symlink's target as written (never followed), `__pycache__` and `.git` left out (Python's
caches and the VCS's own records are not task content). An LFS pointer counts as the
pointer it is: the hash says which files the task was run with, not what a fetch would
bring. Hashes are computed once per folder per process (a task's samples share it).

A large folder takes seconds (bench/provenance_hash.py: about 1 GB/s from the page cache,
a quarter of that from disk), and a score is made on the event loop: `folder_hash_soon`
starts the hash in a background thread when a sample starts, so that its score finds it
done. A score that comes first computes it (or waits for it) there.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

SKIPPED = frozenset({"__pycache__", ".git"})
HASH_CHARS = 16
"""Hex digits kept (64 bits), as the grader version keeps."""
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FolderHash:
    hash: str
    files: int
    bytes: int

    def to_json(self) -> dict[str, str | int]:
        return {"hash": self.hash, "files": self.files, "bytes": self.bytes}


def _entries(root: Path, rel: str = "") -> list[tuple[str, os.DirEntry[str]]]:
    """(relative posix path, entry) of every file and link under `root`, sorted by path."""
    out: list[tuple[str, os.DirEntry[str]]] = []
    with os.scandir(root / rel if rel else root) as it:
        for entry in it:
            path = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_symlink():
                out.append((path, entry))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED:
                    out += _entries(root, path)
            elif entry.is_file(follow_symlinks=False):
                out.append((path, entry))
    return sorted(out, key=lambda pair: pair[0])


def _update(digest: hashlib._Hash, path: str, entry: os.DirEntry[str]) -> int:
    """Add one entry to `digest`; the bytes it held."""
    digest.update(path.encode() + b"\0")
    if entry.is_symlink():
        digest.update(b"L" + os.readlink(entry.path).encode() + b"\0")
        return 0
    size = 0
    try:
        with open(entry.path, "rb") as f:
            digest.update(b"F")
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except OSError as ex:  # an unreadable file still counts, as unreadable
        digest.update(f"?{ex.errno}".encode())
    digest.update(b"\0")
    return size


def _compute(folder: str) -> FolderHash:
    digest = hashlib.sha256()
    files = size = 0
    for path, entry in _entries(Path(folder)):
        size += _update(digest, path, entry)
        files += 1
    return FolderHash(digest.hexdigest()[:HASH_CHARS], files, size)


_lock = threading.Lock()
_hashes: dict[str, Future[FolderHash]] = {}
"""Folder -> its hash, done or under way (one computation per folder per process)."""


def _claim(folder: str) -> tuple[Future[FolderHash], bool]:
    """The folder's future, and whether the caller must compute it."""
    with _lock:
        found = _hashes.get(folder)
        if found is not None:
            return found, False
        _hashes[folder] = future = Future()
        return future, True


def _run(folder: str, future: Future[FolderHash]) -> None:
    try:
        future.set_result(_compute(folder))
    except BaseException as ex:
        with _lock:  # a failure is not kept: a later score tries again
            _hashes.pop(folder, None)
        future.set_exception(ex)


def folder_hash_soon(folder: str) -> None:
    """Start hashing `folder` in a background thread, unless it is done or under way.

    A daemon thread, not an executor's: a process that exits early (a CLI command that
    builds tasks) must not wait for a hash nobody will read."""
    future, mine = _claim(folder)
    if mine:
        name = "labcoat-provenance-hash"
        threading.Thread(target=_run, args=(folder, future), name=name, daemon=True).start()


def folder_hash(folder: str) -> FolderHash:
    """The hash of every file under `folder` (see the module's docstring)."""
    future, mine = _claim(folder)
    if mine:
        _run(folder, future)
    return future.result()


def clear_folder_hashes() -> None:
    """Forget the hashes made so far (tests whose folders change under the cache)."""
    with _lock:
        _hashes.clear()


@functools.cache
def top_files_hash(folder: str) -> str:
    """The hash of a folder's own files, not its sub-folders' (a pset's `papers.yaml` and
    environment files beside it, not every paper)."""
    digest = hashlib.sha256()
    with os.scandir(folder) as it:
        entries = sorted(
            (e for e in it if e.is_symlink() or e.is_file(follow_symlinks=False)),
            key=lambda e: e.name,
        )
    for entry in entries:
        _update(digest, entry.name, entry)
    return digest.hexdigest()[:HASH_CHARS]


@functools.cache
def file_hash(path: str) -> str:
    """The hash of one file's bytes (a sidecar, the judge's prompts)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:HASH_CHARS]


def json_hash(value: object) -> str:
    """The hash of a JSON value (keys sorted): a record that is not a file."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]

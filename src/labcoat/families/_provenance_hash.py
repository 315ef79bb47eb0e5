"""Content hashes of a task's files, for the provenance every score carries.

A task's hash is its folder's content hash (`labcoat._util.content_hash.tree_digest`:
sorted relative paths and bytes, a symlink's target as written and never followed,
`__pycache__` and `.git` left out, an unreadable file marked), its first `HASH_CHARS` hex
digits. An LFS pointer counts as the pointer it is: the hash says which files the task was
run with, not what a fetch would bring. Hashes are computed once per folder per process
(a task's samples share it).

A large folder takes seconds (bench/provenance_hash.py: about 1 GB/s from the page cache,
a quarter of that from disk), and a score is made on the event loop: `folder_hash_soon`
starts the hash in a background thread when a sample starts, so that its score finds it
done. A score that comes first computes it (or waits for it) there.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from concurrent.futures import Future
from dataclasses import dataclass

from labcoat._util.content_hash import clear_tree_digests, file_digest, tree_digest

HASH_CHARS = 16
"""Hex digits kept (64 bits), as the grader version keeps."""


@dataclass(frozen=True)
class FolderHash:
    hash: str
    files: int
    bytes: int

    def to_json(self) -> dict[str, str | int]:
        return {"hash": self.hash, "files": self.files, "bytes": self.bytes}


def _compute(folder: str) -> FolderHash:
    digest = tree_digest(folder)
    return FolderHash(digest.hash[:HASH_CHARS], digest.files, digest.bytes)


_lock = threading.Lock()
_hashes: dict[str, Future[FolderHash]] = {}
"""Folder -> its hash, done or under way (one computation per folder per process)."""


def _claim(folder: str) -> tuple[Future[FolderHash], bool]:
    """The folder's future, and whether the caller must compute it."""
    with _lock:
        found = _hashes.get(folder)
        if found is not None:
            return found, False
        future: Future[FolderHash] = Future()
        _hashes[folder] = future
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
    clear_tree_digests()


@functools.cache
def top_files_hash(folder: str) -> str:
    """The hash of a folder's own files, not its sub-folders' (a pset's `papers.yaml` and
    environment files beside it, not every paper)."""
    return tree_digest(folder, subfolders=False).hash[:HASH_CHARS]


@functools.cache
def file_hash(path: str) -> str:
    """The hash of one file's bytes (a sidecar, the judge's prompts)."""
    return file_digest(path)[:HASH_CHARS]


def json_hash(value: object) -> str:
    """The hash of a JSON value (keys sorted): a record that is not a file."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_CHARS]

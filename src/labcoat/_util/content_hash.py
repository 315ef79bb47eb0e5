"""Content hashes of files and folders: the one way labcoat fingerprints what it keys.

Image cache keys (a build context, an image's `/root` source), environment keys (the
local files and folders a requirements file names), the provenance every score carries
(a task's folder, a sidecar, the judge's prompts), the keep store's blobs and the shared
store of large environment files all hash through here, so that they agree on what a
folder holds:

- **A file** (`file_digest`): SHA-256 of its bytes. A file that cannot be read raises
  `OSError` naming it: one file has nothing else to stand for it.
- **A folder** (`tree_digest`): every entry below it, sorted by relative POSIX path, each
  as its path and then
  - a regular file: its bytes;
  - a symlink: the text it holds (`os.readlink`), never followed. A symlinked folder is a
    link like any other: pointing it elsewhere changes the hash, the folder it points to
    does not count (a copy with `cp -a`, as an image build makes, copies the link too);
  - a file that cannot be read, or a folder that cannot be listed: a mark with the errno,
    and its path in `TreeDigest.unreadable`. Never skipped in silence, and not an error:
    a hash is a record of what was there, and a task's provenance or an image's key must
    not fail for a file that nothing running as this user can read either (so its bytes
    cannot have shaped what the hash stands for); the mark changes the hash when the
    file becomes readable, and callers that care (an image key) log the names;
  - anything else (a socket, a FIFO, a device): a mark of its kind, never opened.
  `.git` and `__pycache__` folders are left out at every depth, for every caller: a
  repository's own records and Python's caches are not content (a build context that
  is a checkout keeps its key when `git fetch` runs). Modes, owners, times and empty
  folders do not count.

Reading a folder's bytes is the slow part (about 1 GB/s from the page cache, a quarter of
that from disk: bench/provenance_hash.py), so within one process a folder is read again
only when the stat of one of its entries (size, mtime, ctime, inode) changed; the walk
that tells is cheap. The check never replaces the hash: it decides only whether the hash
made earlier in this process still stands.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

SKIPPED_DIRS = frozenset({".git", "__pycache__"})
"""Folders no tree hash includes, at any depth."""
CHUNK = 1 << 20


@dataclass(frozen=True)
class TreeDigest:
    hash: str
    """SHA-256 hex digest of the folder's entries (see the module's docstring)."""
    files: int
    """Entries hashed: files, links, unreadable and special ones."""
    bytes: int
    """Bytes of the regular files read."""
    unreadable: tuple[str, ...] = field(default=())
    """Relative paths that could not be read or listed (marked in the hash)."""


def sized_chunks(fd: int, size: int, check: Callable[[], object] | None = None) -> Iterator[bytes]:
    """The `size` bytes of the open file `fd`, in chunks; `check` is called before each
    (it may raise to stop). A file that is not that size any more raises OSError."""
    left = size
    while left > 0:
        if check is not None:
            check()
        chunk = os.read(fd, min(CHUNK, left))
        if not chunk:
            raise OSError(f"shrank while read (expected {size} bytes)")
        left -= len(chunk)
        yield chunk
    if os.read(fd, 1):
        raise OSError(f"grew while read (expected {size} bytes)")


def file_digest(
    path: str | os.PathLike[str],
    *,
    follow_links: bool = True,
    size: int | None = None,
    check: Callable[[], object] | None = None,
) -> str:
    """SHA-256 hex digest of one file's bytes.

    Args:
        path: the file.
        follow_links: False to refuse a symlink (OSError ELOOP) instead of reading its target.
        size: the bytes it must hold (a file that shrinks or grows while read raises
            OSError); None for the size it has when opened.
        check: called before each chunk (the keep store's deadline); may raise.

    Returns:
        64 hex digits. Raises OSError (naming the file) when it cannot be read.
    """
    # O_NONBLOCK: a FIFO put where a file was cannot block the open
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    fd = os.open(path, flags)  # its OSError names the file
    digest = hashlib.sha256()
    try:
        expected = os.fstat(fd).st_size if size is None else size
        for chunk in sized_chunks(fd, expected, check):
            digest.update(chunk)
    except OSError as ex:
        if ex.errno is not None and ex.filename is None:  # a read error: name the file
            ex.filename = os.fspath(path)
        raise
    finally:
        os.close(fd)
    return digest.hexdigest()


@dataclass(frozen=True)
class _Entry:
    rel: str
    path: str
    kind: str
    """F file, L link, ? unreadable (file or folder), S special."""
    stamp: tuple[int, ...]
    error: int = 0


def _walk(root: str, rel: str, subfolders: bool, out: list[_Entry]) -> None:
    folder = os.path.join(root, rel) if rel else root
    try:
        it = os.scandir(folder)
    except OSError as ex:
        if not rel:
            raise  # the folder asked for: there is nothing to hash
        out.append(_Entry(rel, folder, "?", (), ex.errno or errno.EIO))
        return
    with it:
        for entry in it:
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as ex:
                out.append(_Entry(path, entry.path, "?", (), ex.errno or errno.EIO))
                continue
            stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            if stat.S_ISLNK(st.st_mode):
                out.append(_Entry(path, entry.path, "L", stamp))
            elif stat.S_ISDIR(st.st_mode):
                if subfolders and entry.name not in SKIPPED_DIRS:
                    _walk(root, path, subfolders, out)
            elif stat.S_ISREG(st.st_mode):
                out.append(_Entry(path, entry.path, "F", stamp))
            else:
                out.append(_Entry(path, entry.path, "S", stamp))


def _entries(folder: str, subfolders: bool) -> list[_Entry]:
    out: list[_Entry] = []
    _walk(folder, "", subfolders, out)
    return sorted(out, key=lambda e: e.rel)


def _add(digest: hashlib._Hash, entry: _Entry) -> tuple[int, bool]:
    """Add one entry to `digest`: (bytes read, whether it could be read)."""
    digest.update(os.fsencode(entry.rel) + b"\0")
    size, readable = 0, True
    if entry.kind == "L":
        digest.update(b"L" + os.fsencode(os.readlink(entry.path)))
    elif entry.kind == "F":
        try:
            with open(entry.path, "rb") as f:
                digest.update(b"F")
                while chunk := f.read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
        except OSError as ex:
            digest.update(f"?{ex.errno}".encode())
            readable = False
    elif entry.kind == "S":
        digest.update(b"S")
    else:
        digest.update(f"?{entry.error}".encode())
        readable = False
    digest.update(b"\0")
    return size, readable


_lock = threading.Lock()
_digests: dict[tuple[str, bool, str], TreeDigest] = {}
"""(folder, subfolders, digest of its entries' stats) -> the tree's digest (this process)."""
_file_digests: dict[tuple[str, int, int, int, int], str] = {}
"""(file, size, mtime, ctime, inode) -> `path_digest`'s digest of it (this process)."""


def tree_digest(folder: str | os.PathLike[str], *, subfolders: bool = True) -> TreeDigest:
    """The content hash of everything under `folder` (see the module's docstring).

    Args:
        folder: the folder (a symlink to one is followed: it is the folder asked for).
        subfolders: False for the folder's own entries only (a pset's files beside its
            papers' folders).

    Returns:
        The digest. Raises OSError when `folder` itself cannot be listed.
    """
    root = os.fspath(folder)
    entries = _entries(root, subfolders)
    stamps = hashlib.sha256()
    for e in entries:
        stamps.update(os.fsencode(f"{e.rel}\0{e.kind}{e.stamp}{e.error}\0"))
    key = (root, subfolders, stamps.hexdigest())
    with _lock:
        found = _digests.get(key)
    if found is not None:
        return found
    digest = hashlib.sha256()
    size = 0
    unreadable: list[str] = []
    for entry in entries:
        read, readable = _add(digest, entry)
        size += read
        if not readable:
            unreadable.append(entry.rel)
    result = TreeDigest(digest.hexdigest(), len(entries), size, tuple(unreadable))
    with _lock:
        _digests[key] = result
    return result


def clear_tree_digests() -> None:
    """Forget the digests made so far (benchmarks that time the hash itself)."""
    with _lock:
        _digests.clear()
        _file_digests.clear()


def path_digest(path: str | os.PathLike[str]) -> str:
    """A folder's `tree_digest` hash, a file's `file_digest`: for a path that may be either
    (a local package or wheel a requirements line names). Like a folder, a file is read
    again in this process only when its stat changed (an environment's key is asked for
    often, and a wheel can be gigabytes)."""
    if os.path.isdir(path):
        return tree_digest(path).hash
    st = os.stat(path)
    key = (os.fspath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    with _lock:
        found = _file_digests.get(key)
    if found is None:
        found = file_digest(path)
        with _lock:
            _file_digests[key] = found
    return found


__all__ = [
    "SKIPPED_DIRS",
    "TreeDigest",
    "clear_tree_digests",
    "file_digest",
    "path_digest",
    "sized_chunks",
    "tree_digest",
]

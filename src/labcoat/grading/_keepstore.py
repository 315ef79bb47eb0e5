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
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST_VERSION = 1
BLOBS, SAMPLES = "blobs", "samples"
DEFAULT_EXCLUDE = ("__pycache__", ".venv", "*.pyc")
"""Left out of every kept workspace: rebuilt by the task's setup or by Python itself.
`.git` is kept: ResearchGym's grader records the workspace's git history, and a
repository's objects are files like any other (identical ones are stored once)."""
CHUNK = 1 << 20


@dataclass(frozen=True)
class Caps:
    file_bytes: int
    """A file larger than this is kept by reference (path, size, sha256; no bytes)."""
    sample_bytes: int
    """Once a sample's kept bytes would pass this, its further files are kept by reference."""


@dataclass
class Tree:
    """What a walk of a workspace kept: the manifest's body."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: dict[str, int] = field(default_factory=dict)
    by_reference: dict[str, dict[str, Any]] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    kept_bytes: int = 0
    new_bytes: int = 0


def excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    """A pattern without `/` matches a file or folder of that name anywhere (as in
    .gitignore); one with `/` matches the path from the workspace's root."""
    name = rel.rsplit("/", 1)[-1]
    for pattern in patterns:
        target = rel if "/" in pattern.strip("/") else name
        if fnmatch.fnmatchcase(target, pattern.strip("/")):
            return True
    return False


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def blob_path(root: Path, sha: str) -> Path:
    return root / BLOBS / sha[:2] / sha[2:]


def manifest_path(root: Path, sample_uuid: str) -> Path:
    return root / SAMPLES / f"{sample_uuid}.json"


def _atomic_write(target: Path, write: Any) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _store_blob(root: Path, source: Path, sha: str) -> bool:
    """Copy `source` in as blob `sha` unless it is there; whether bytes were written."""
    target = blob_path(root, sha)
    if target.exists():
        return False

    def copy(out: Any) -> None:
        with source.open("rb") as f:
            while chunk := f.read(CHUNK):
                out.write(chunk)

    _atomic_write(target, copy)
    return True


def save_tree(source: Path, root: Path, caps: Caps, exclude: tuple[str, ...]) -> Tree:
    """Walk `source` and keep it in the store at `root` (symlinks are recorded, never
    followed; sockets, FIFOs and unreadable files are named in `skipped`)."""
    tree = Tree()
    for here, dirnames, filenames in os.walk(source):
        base = Path(here)
        rel_base = base.relative_to(source).as_posix()
        prefix = "" if rel_base == "." else rel_base + "/"
        for name in sorted(dirnames):
            rel, path = prefix + name, base / name
            if excluded(rel, exclude):
                tree.excluded.append(rel)
                dirnames.remove(name)
            elif path.is_symlink():
                tree.links[rel] = os.readlink(path)
                dirnames.remove(name)
            else:
                tree.dirs[rel] = stat.S_IMODE(path.lstat().st_mode)
        dirnames.sort()
        for name in sorted(filenames):
            rel, path = prefix + name, base / name
            if excluded(rel, exclude):
                tree.excluded.append(rel)
                continue
            _keep_file(tree, rel, path, root, caps)
    return tree


def _keep_file(tree: Tree, rel: str, path: Path, root: Path, caps: Caps) -> None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        tree.links[rel] = os.readlink(path)
        return
    if not stat.S_ISREG(info.st_mode):
        tree.skipped[rel] = "not a regular file"
        return
    try:
        sha = sha256_of(path)
    except OSError as ex:
        tree.skipped[rel] = f"unreadable: {ex.strerror or ex}"
        return
    entry = {"sha256": sha, "size": info.st_size, "mode": stat.S_IMODE(info.st_mode)}
    if info.st_size > caps.file_bytes:
        tree.by_reference[rel] = {**entry, "why": f"over the per-file cap ({caps.file_bytes} B)"}
        return
    if tree.kept_bytes + info.st_size > caps.sample_bytes:
        why = f"over the per-sample cap ({caps.sample_bytes} B)"
        tree.by_reference[rel] = {**entry, "why": why}
        return
    if _store_blob(root, path, sha):
        tree.new_bytes += info.st_size
    tree.kept_bytes += info.st_size
    tree.files[rel] = entry


def write_manifest(root: Path, sample_uuid: str, manifest: dict[str, Any]) -> Path:
    target = manifest_path(root, sample_uuid)
    text = json.dumps({"version": MANIFEST_VERSION, **manifest}, indent=1, sort_keys=True)
    _atomic_write(target, lambda f: f.write(text.encode()))
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
        path.write_bytes(blob.read_bytes())
        os.chmod(path, entry["mode"])
    for rel, link in sorted((manifest.get("links") or {}).items()):
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link, target / rel)
    for rel, mode in sorted((manifest.get("dirs") or {}).items(), reverse=True):
        os.chmod(target / rel, mode | 0o700)  # the owner can always clean it up
    return sorted(missing)

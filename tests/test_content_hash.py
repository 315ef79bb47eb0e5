"""The one content hash (labcoat._util.content_hash): what a tree includes, how links and
unreadable files count, and that the image key, provenance and the keep store use it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from labcoat._util import content_hash
from labcoat._util.content_hash import (
    clear_tree_digests,
    file_digest,
    path_digest,
    tree_digest,
)


def _hash(folder: Path) -> str:
    clear_tree_digests()  # each call reads the tree again, not this process's memo
    return tree_digest(folder).hash


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a = 1\n")
    (root / "data.txt").write_text("data\n")
    return root


def _deny(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Make `path` unreadable: by its mode, or (as root, who reads any mode) by refusing
    its open and listing as the kernel would refuse them."""
    if os.geteuid() != 0:
        path.chmod(0)
        return
    real_open, real_os_open, real_scandir = open, os.open, os.scandir

    def refused(target: object) -> bool:
        return os.fspath(target) == str(path)  # type: ignore[arg-type]

    def fake_open(target: object, *args: object, **kwargs: object) -> object:
        if refused(target):
            raise PermissionError(13, "Permission denied", str(target))
        return real_open(target, *args, **kwargs)  # type: ignore[call-overload]

    def fake_os_open(target: object, *args: object, **kwargs: object) -> int:
        if refused(target):
            raise PermissionError(13, "Permission denied", str(target))
        return real_os_open(target, *args, **kwargs)  # type: ignore[arg-type]

    def fake_scandir(target: object) -> object:
        if refused(target):
            raise PermissionError(13, "Permission denied", str(target))
        return real_scandir(target)  # type: ignore[arg-type]

    monkeypatch.setattr(content_hash, "open", fake_open, raising=False)
    monkeypatch.setattr(content_hash.os, "open", fake_os_open)
    monkeypatch.setattr(content_hash.os, "scandir", fake_scandir)


def _allow(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    path.chmod(0o700)
    monkeypatch.undo()


def test_a_file_digest_is_sha256_of_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 3_000_000)  # more than one chunk
    assert file_digest(path) == hashlib.sha256(b"x" * 3_000_000).hexdigest()
    assert path_digest(path) == file_digest(path)


def test_a_tree_follows_contents_and_paths(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    first = _hash(root)
    assert first == _hash(root)
    (root / "data.txt").write_text("DATA\n")  # same size, other bytes
    changed = _hash(root)
    assert changed != first
    (root / "data.txt").rename(root / "other.txt")  # same bytes, other name
    assert _hash(root) not in (first, changed)
    info = tree_digest(root)
    assert (info.files, info.bytes, info.unreadable) == (2, 11, ())


def test_git_and_pycache_are_left_out_at_every_depth(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    first = _hash(root)
    for folder in (root / ".git", root / "pkg" / "__pycache__", root / "pkg" / ".git"):
        folder.mkdir()
        (folder / "HEAD").write_text("ref: refs/heads/main\n")
    assert _hash(root) == first
    assert tree_digest(root).files == 2


def test_a_symlink_counts_as_its_text_not_its_target(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.bin").write_text("outside\n")
    (root / "data_link").symlink_to(outside)
    first = _hash(root)
    (outside / "big.bin").write_text("changed outside\n")
    assert _hash(root) == first  # never followed
    assert tree_digest(root).bytes == 11


def test_a_symlinked_folder_pointed_elsewhere_changes_the_hash(tmp_path: Path) -> None:
    """The old image key walked past a linked folder: retargeting it kept the key."""
    root = _tree(tmp_path / "context")
    for name in ("v1", "v2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "weights.bin").write_text(name)
    (root / "weights").symlink_to(tmp_path / "v1")
    first = _hash(root)
    (root / "weights").unlink()
    (root / "weights").symlink_to(tmp_path / "v2")
    assert _hash(root) != first


def test_the_memo_rereads_a_tree_whose_entries_changed(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    clear_tree_digests()
    first = tree_digest(root).hash
    (root / "pkg" / "a.py").write_text("a = 22\n")  # a new size: the stat walk sees it
    assert tree_digest(root).hash != first


def test_an_unreadable_file_is_marked_never_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "t")
    readable = _hash(root)
    secret = root / "secret.txt"
    secret.write_text("one\n")
    _deny(monkeypatch, secret)
    try:
        marked = _hash(root)
        assert marked != readable  # not skipped: its presence counts
        info = tree_digest(root)
        assert info.unreadable == ("secret.txt",) and info.files == 3
    finally:
        _allow(monkeypatch, secret)
    assert _hash(root) not in (marked, readable)  # readable again: its bytes count


def test_an_unlistable_folder_is_marked_and_a_single_file_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "t")
    closed = root / "closed"
    closed.mkdir()
    (closed / "x").write_text("x")
    _deny(monkeypatch, closed)
    try:
        clear_tree_digests()
        assert tree_digest(root).unreadable == ("closed",)
    finally:
        _allow(monkeypatch, closed)
    secret = root / "secret.txt"
    secret.write_text("one\n")
    _deny(monkeypatch, secret)
    try:
        with pytest.raises(PermissionError) as raised:
            file_digest(secret)
        assert str(secret) in str(raised.value)  # the error names the file
    finally:
        _allow(monkeypatch, secret)


def test_a_fifo_is_marked_never_opened(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    plain = _hash(root)
    os.mkfifo(root / "pipe")  # opening it to read would block
    assert _hash(root) != plain
    assert tree_digest(root).files == 3


def test_a_missing_folder_is_an_error_not_an_empty_tree(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        tree_digest(tmp_path / "nowhere")


def test_file_digest_without_links_refuses_one(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("t")
    (tmp_path / "link").symlink_to(target)
    assert file_digest(tmp_path / "link") == file_digest(target)
    with pytest.raises(OSError):
        file_digest(tmp_path / "link", follow_links=False)


def test_a_file_that_is_not_its_expected_size_raises(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"12345")
    with pytest.raises(OSError, match="shrank"):
        file_digest(path, size=9)
    with pytest.raises(OSError, match="grew"):
        file_digest(path, size=2)


def test_top_level_only_leaves_subfolders_out(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    first = tree_digest(root, subfolders=False)
    (root / "pkg" / "a.py").write_text("changed = True\n")
    assert tree_digest(root, subfolders=False).hash == first.hash and first.files == 1


# --- its users -------------------------------------------------------------------------


def test_the_image_key_follows_a_retargeted_folder_link_and_ignores_git(tmp_path: Path) -> None:
    from labcoat.sandbox import ImageSpec, ImageStep, PythonEnv

    context = _tree(tmp_path / "context")
    for name in ("v1", "v2"):
        (tmp_path / name).mkdir()
    (context / "weights").symlink_to(tmp_path / "v1")
    spec = ImageSpec(
        name="t",
        environment=PythonEnv(),
        context=str(context),
        steps=(ImageStep(label="s", argv=("true",)),),
    )
    from labcoat.sandbox._image import image_key

    clear_tree_digests()
    first = image_key(spec)
    (context / ".git").mkdir()
    (context / ".git" / "index").write_text("index")
    assert image_key(spec) == first
    (context / "weights").unlink()
    (context / "weights").symlink_to(tmp_path / "v2")
    assert image_key(spec) != first


def test_provenance_and_the_keep_store_hash_through_it(tmp_path: Path) -> None:
    from labcoat.families._provenance_hash import (
        HASH_CHARS,
        clear_folder_hashes,
        file_hash,
        folder_hash,
        top_files_hash,
    )
    from labcoat.grading._keepstore import sha256_of

    root = _tree(tmp_path / "t")
    clear_folder_hashes()
    assert folder_hash(str(root)).hash == tree_digest(root).hash[:HASH_CHARS]
    top = tree_digest(root, subfolders=False).hash[:HASH_CHARS]
    assert top_files_hash(str(root)) == top
    path = root / "data.txt"
    assert file_hash(str(path)) == file_digest(path)[:HASH_CHARS]
    assert sha256_of(path) == file_digest(path)


def test_a_local_requirement_is_keyed_by_content_not_time(tmp_path: Path) -> None:
    from labcoat.sandbox._requirements import PythonEnv

    pkg = _tree(tmp_path / "pkg")
    env = PythonEnv(requirements=(str(pkg),))
    clear_tree_digests()
    first = env.content_digest()
    os.utime(pkg / "data.txt", ns=(1, 1))  # touched: same bytes
    assert env.content_digest() == first
    (pkg / "data.txt").write_text("DATA\n")  # same size, other bytes
    assert env.content_digest() != first

"""The workspace store: blobs stored once, caps, exclusions, links, a faithful restore."""

from __future__ import annotations

import os
from pathlib import Path

from labcoat.grading._keepstore import (
    Caps,
    blob_path,
    materialize,
    read_manifest,
    save_tree,
    write_manifest,
)

BIG = Caps(file_bytes=1 << 20, sample_bytes=1 << 30)


def workspace(root: Path) -> Path:
    (root / "src" / "__pycache__").mkdir(parents=True)
    (root / "src" / "model.py").write_text("print('hi')\n")
    (root / "src" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0" * 10)
    (root / "data").mkdir()
    (root / "data" / "weights.bin").write_bytes(b"w" * 5000)
    (root / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)
    os.symlink("src/model.py", root / "link.py")
    return root


def blobs(store: Path) -> list[Path]:
    return sorted(p for p in (store / "blobs").rglob("*") if p.is_file())


def test_files_shared_by_two_samples_are_stored_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = save_tree(workspace(tmp_path / "a"), store, BIG, ("__pycache__",))
    stored = blobs(store)
    assert len(stored) == 3  # model.py, weights.bin, run.sh
    mtimes = [p.stat().st_mtime_ns for p in stored]
    second = save_tree(workspace(tmp_path / "b"), store, BIG, ("__pycache__",))
    assert blobs(store) == stored
    assert [p.stat().st_mtime_ns for p in stored] == mtimes  # an existing blob is not rewritten
    assert first.files == second.files
    assert first.new_bytes > 0 and second.new_bytes == 0
    assert not list(store.rglob(".tmp-*"))  # writes are renames of finished files


def test_a_file_over_the_cap_is_kept_by_reference(tmp_path: Path) -> None:
    store = tmp_path / "store"
    tree = save_tree(workspace(tmp_path / "a"), store, Caps(1000, 1 << 30), ())
    ref = tree.by_reference["data/weights.bin"]
    assert ref["size"] == 5000 and "per-file cap" in ref["why"]
    assert "sha256" not in ref  # judged by its size alone: never read
    assert "data/weights.bin" not in tree.files
    assert blobs(store) == sorted(blob_path(store, e["sha256"]) for e in tree.files.values())


def test_the_sample_cap_keeps_the_rest_by_reference(tmp_path: Path) -> None:
    tree = save_tree(workspace(tmp_path / "a"), tmp_path / "store", Caps(1 << 20, 100), ())
    assert "data/weights.bin" in tree.by_reference
    assert "per-sample cap" in tree.by_reference["data/weights.bin"]["why"]
    assert tree.kept_bytes <= 100


def test_exclusions_by_name_anywhere_and_by_path(tmp_path: Path) -> None:
    tree = save_tree(workspace(tmp_path / "a"), tmp_path / "store", BIG, ("__pycache__", "data/*"))
    assert sorted(tree.excluded) == ["data/weights.bin", "src/__pycache__"]
    assert set(tree.files) == {"src/model.py", "run.sh"}
    assert tree.links == {"link.py": "src/model.py"}


def test_a_kept_tree_is_restored_as_it_was(tmp_path: Path) -> None:
    store = tmp_path / "store"
    tree = save_tree(workspace(tmp_path / "a"), store, Caps(1000, 1 << 30), ())
    path = write_manifest(
        store,
        "uuid1",
        {
            "files": tree.files,
            "links": tree.links,
            "dirs": tree.dirs,
            "by_reference": tree.by_reference,
        },
    )
    target = tmp_path / "restored"
    target.mkdir()
    missing = materialize(read_manifest(path), store, target)
    assert missing == ["data/weights.bin"]
    assert (target / "src" / "model.py").read_text() == "print('hi')\n"
    assert os.readlink(target / "link.py") == "src/model.py"
    assert (target / "run.sh").stat().st_mode & 0o777 == 0o755

"""`labcoat._util.atomic`: a file is replaced whole or not at all, with the mode a plain
write would give it (or the one asked for), and no temporary is ever left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

import pytest

from labcoat._util.atomic import atomic_create, atomic_write


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> object:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_bytes_text_and_writer(tmp_path: Path) -> None:
    target = tmp_path / "f"
    atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    atomic_write(target, "é", encoding="utf-8")
    assert target.read_text(encoding="utf-8") == "é"

    def write(f: BinaryIO) -> None:
        f.write(b"a")
        f.write(b"b")

    atomic_write(target, write, fsync=False)
    assert target.read_bytes() == b"ab"
    assert os.listdir(tmp_path) == ["f"]


def test_mode_is_a_plain_writes_not_mkstemps(tmp_path: Path, umask_022: object) -> None:
    atomic_write(tmp_path / "plain", "x")
    assert mode_of(tmp_path / "plain") == 0o644  # 0o666 less the umask, not 0o600
    atomic_write(tmp_path / "private", "x", mode=0o600)
    assert mode_of(tmp_path / "private") == 0o600
    os.umask(0o077)  # an explicit mode holds whatever the umask
    atomic_write(tmp_path / "shared", "x", mode=0o644)
    assert mode_of(tmp_path / "shared") == 0o644


def test_replaces_in_one_step_and_keeps_other_links(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("old")
    reader = target.open()  # a reader that opened the old file keeps reading it whole
    other = tmp_path / "hardlink"
    os.link(target, other)
    inode = target.stat().st_ino
    atomic_write(target, "new")
    assert target.read_text() == "new" and target.stat().st_ino != inode
    assert reader.read() == "old" and other.read_text() == "old"
    reader.close()


class Boom(Exception):
    pass


def test_an_error_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("old")

    def half(f: BinaryIO) -> None:
        f.write(b"half")
        raise Boom

    def half_file(tmp: Path) -> None:
        tmp.write_text("half")
        raise Boom

    with pytest.raises(Boom):
        atomic_write(target, half)
    with pytest.raises(Boom):
        atomic_create(target, half_file)
    assert target.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_a_missing_folder_is_an_oserror_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "no" / "f", "x")
    assert os.listdir(tmp_path) == []


def test_create_gets_a_fresh_hidden_path_beside_the_target(tmp_path: Path) -> None:
    seen: list[Path] = []

    def create(tmp: Path) -> None:
        assert not tmp.exists()
        seen.append(tmp)
        tmp.write_bytes(b"made")
        os.chmod(tmp, 0o751)

    atomic_create(tmp_path / "x.eval", create)
    assert seen[0].parent == tmp_path and seen[0].name.startswith(".x.eval.")
    assert not seen[0].name.endswith(".eval")  # no listing of logs picks it up
    assert (tmp_path / "x.eval").read_bytes() == b"made"
    assert mode_of(tmp_path / "x.eval") == 0o751  # mode=None keeps what create made
    atomic_create(tmp_path / "x.eval", lambda tmp: tmp.write_bytes(b"2"), mode=0o640)
    assert mode_of(tmp_path / "x.eval") == 0o640
    assert sorted(os.listdir(tmp_path)) == ["x.eval"]


def test_create_by_hard_link(tmp_path: Path) -> None:
    stored, copy = tmp_path / "stored", tmp_path / "copy"
    stored.write_bytes(b"same")
    copy.write_bytes(b"same")
    atomic_create(copy, lambda tmp: os.link(stored, tmp), fsync=False)
    assert copy.stat().st_ino == stored.stat().st_ino

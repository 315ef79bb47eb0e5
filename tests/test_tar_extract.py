"""Safe tar extraction on Pythons without extraction filters (Debian 12's 3.11.2): the
fallback refuses what the `data` and `tar` filters refuse. Both paths run here: Python's
own filters where this Python has them, and the fallback with them hidden."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from labcoat._util.tar_extract import UnsafeMember, extract_all


def archive(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


def file(name: str, mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, b"x"


def link(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, b""


@pytest.fixture(params=["python's filters", "fallback"])
def which(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no extraction filters (the fallback is tested)")
    return request.param


def test_ordinary_members_land_with_safe_modes(tmp_path: Path, which: str) -> None:
    extract_all(archive(file("a/run.sh", 0o4755), file("a/data.txt", 0o666)), tmp_path)
    assert (tmp_path / "a/run.sh").read_bytes() == b"x"
    assert os.stat(tmp_path / "a/run.sh").st_mode & 0o7777 == 0o755  # no setuid
    assert os.stat(tmp_path / "a/data.txt").st_mode & 0o777 == 0o644  # no others' write


@pytest.mark.parametrize(
    "member",
    [file("../escape"), link("out", "/etc/passwd"), link("up", "../..")],
)
def test_what_leaves_the_folder_is_refused_for_data(
    tmp_path: Path, which: str, member: tuple[tarfile.TarInfo, bytes]
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    with pytest.raises(tarfile.TarError):  # UnsafeMember, or Python's FilterError
        extract_all(archive(member), target)
    assert list(target.iterdir()) == [] and not (tmp_path / "escape").exists()


def test_an_absolute_name_never_lands_outside(tmp_path: Path, which: str) -> None:
    target = tmp_path / "target"
    target.mkdir()
    name = str(tmp_path / "outside")
    # Python's filters strip the leading slash; the fallback refuses
    with contextlib.suppress(tarfile.TarError):
        extract_all(archive(file(name)), target)
    assert not Path(name).exists()


def test_a_tree_keeps_its_outward_links(tmp_path: Path, which: str) -> None:
    # `tar` (trees packed by labcoat itself, e.g. a venv) keeps links such as python -> /usr/bin
    extract_all(archive(link("bin/python", "/usr/bin/python3")), tmp_path, "tar")
    assert os.readlink(tmp_path / "bin/python") == "/usr/bin/python3"
    with pytest.raises(tarfile.TarError):
        extract_all(archive(file("../escape")), tmp_path / "t", "tar")


def test_the_fallback_error_is_a_tar_error() -> None:
    assert issubclass(UnsafeMember, tarfile.TarError)

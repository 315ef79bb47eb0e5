"""Each user's sandboxes live in a folder of their own: a folder shared across users (one
root made first, say) would refuse everyone else's samples."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from labcoat._errors import LabcoatError
from labcoat.sandbox import BwrapConfig, BwrapSession
from labcoat.sandbox._layout import default_sandboxes_root, gpu_locks_dir, sandboxes_root
from labcoat.sandbox._userns import mapping_problem, run_as_namespace_root

OTHER_UID = 65534  # nobody
SRC = Path(__file__).resolve().parents[2] / "src"

START = textwrap.dedent(
    """
    import anyio
    from labcoat.sandbox import BwrapConfig, BwrapSession

    async def main():
        session = await BwrapSession.create(BwrapConfig(memory_mb=256))
        result = await session.exec(["sh", "-c", "echo started"])
        print(session.dirs.root, result.stdout.strip(), flush=True)
        await session.close()

    anyio.run(main)
    """
)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder other users can reach (pytest's own are root's alone, 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="labcoat-test-users-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shared_tmp(outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A /tmp of our own (sticky, writable by all, as /tmp is), and no LABCOAT_SANDBOX_DIR."""
    tmp = outside / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    monkeypatch.delenv("LABCOAT_SANDBOX_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    return tmp


def test_each_uid_has_its_own_default_folder() -> None:
    mine, other = default_sandboxes_root(0), default_sandboxes_root(1000)
    assert mine != other
    assert mine.parent == other.parent == Path(tempfile.gettempdir())
    assert default_sandboxes_root() == default_sandboxes_root(os.geteuid())


def test_the_default_folder_is_the_users_own(shared_tmp: Path) -> None:
    root = sandboxes_root()
    assert root == shared_tmp / f"labcoat-sandboxes-{os.geteuid()}"
    assert root.stat().st_uid == os.geteuid()
    assert root.stat().st_mode & 0o777 == 0o711


@pytest.mark.skipif(
    os.geteuid() != 0 and mapping_problem() is not None,
    reason=f"giving a folder to another user needs root or a subordinate range: {mapping_problem()}",
)
def test_a_default_folder_another_user_made_is_refused(shared_tmp: Path) -> None:
    planted = default_sandboxes_root()
    planted.mkdir()
    if os.geteuid() == 0:
        os.chown(planted, OTHER_UID, OTHER_UID)
    else:  # rootless: an id of this user's subordinate range is another user's on the host
        run_as_namespace_root(["chown", "5:5", str(planted)])
    with pytest.raises(LabcoatError, match="belongs to another user"):
        sandboxes_root()
    if os.geteuid() != 0:
        run_as_namespace_root(["rmdir", str(planted)])


def test_gpu_locks_are_one_folder_for_every_user(shared_tmp: Path) -> None:
    folder = gpu_locks_dir()
    assert folder == shared_tmp / "labcoat-gpu-locks"
    assert folder.stat().st_mode & 0o7777 == 0o1777


def _as_other_user_env(shared_tmp: Path, home: Path) -> dict[str, str]:
    site = sysconfig.get_paths()["purelib"]
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(shared_tmp),
        "PYTHONPATH": f"{SRC}:{site}",
    }


def _as_user(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


def _bwrap_problem_for(uid: int) -> str | None:
    """Why `uid` cannot start the smallest bwrap sandbox here (None: it can)."""
    done = subprocess.run(
        [*_as_user(uid), "bwrap", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc",
         "--dev", "/dev", "true"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    return None if done.returncode == 0 else done.stderr.strip()[-300:] or "it failed"


def _python_for(uid: int) -> str | None:
    """An interpreter the other user may run (the venv's may sit in root's home)."""
    for python in (sys.executable, "/usr/bin/python3"):
        probe = subprocess.run(
            # run from within, as labcoat runs it (`sys.executable -m pip`): setpriv's own
            # exec may pass where the user's later ones are refused
            [
                *_as_user(uid),
                python,
                "-c",
                "import subprocess, sys; subprocess.run(sys.executable)",
            ],
            capture_output=True,
        )
        if probe.returncode == 0:
            return python
    return None


@pytest.mark.skipif(
    os.geteuid() != 0, reason="a root-run labcoat beside another user's: this test runs as root"
)
async def test_root_and_another_user_run_sandboxes_on_one_machine(
    shared_tmp: Path, outside: Path
) -> None:
    # root first: its folder exists (root's own, 0711) when the other user starts
    session = await BwrapSession.create(BwrapConfig(memory_mb=256))
    try:
        root_folder = session.dirs.root.parent
        python = _python_for(OTHER_UID)
        if python is None:
            pytest.skip(f"no Python interpreter uid {OTHER_UID} may run")
        if problem := _bwrap_problem_for(OTHER_UID):
            # a container started with root's least privilege gives root's mode only
            pytest.skip(f"uid {OTHER_UID} cannot start a bwrap sandbox here: {problem}")
        home = outside / "home"
        home.mkdir()
        os.chown(home, OTHER_UID, OTHER_UID)
        other = subprocess.run(
            [*_as_user(OTHER_UID), python, "-c", START],
            capture_output=True,
            text=True,
            env=_as_other_user_env(shared_tmp, home),
            timeout=120,
        )
    finally:
        await session.close()
    assert other.returncode == 0, other.stderr[-2000:]
    folder, said = other.stdout.split()
    assert said == "started"
    other_folder = Path(folder).parent
    assert other_folder == shared_tmp / f"labcoat-sandboxes-{OTHER_UID}"
    assert other_folder != root_folder and other_folder.stat().st_uid == OTHER_UID

"""The grading pool attacked from inside a completion: what a test run can and cannot do.

Each test writes a tiny paper whose snippet is `return 1`, and grades completions that
probe their surroundings before returning 1 (their output lands in the run's stdout).
Every test runs twice: runs forked from the paper's preloaded interpreter, and runs in
a fresh interpreter each (`preload=False`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from isolation_modes import SEPARATE_USERS, needs_one_user

from labcoat.families.researchcodebench import FailureKind
from labcoat.families.researchcodebench._environment import MissingModulesError
from labcoat.families.researchcodebench._grading import GradingPool, Watch

from .helpers import probe_file, probe_paper

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

PRIVILEGED = SEPARATE_USERS  # a uid of its own per run: root, or a subordinate range


@pytest.fixture(params=[True, False], ids=["preloaded", "fresh"])
def pool_kind(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def make_pool(parallel: int, preload: bool) -> GradingPool:
    return GradingPool(parallel, preload=preload)


async def test_reference_passes_and_wrong_code_fails(pool_kind: bool, tmp_path: Path) -> None:
    paper = probe_paper(tmp_path)
    async with make_pool(2, pool_kind) as pool:
        good, bad, broken = [
            await pool.grade(paper, {"probe_mod.py": probe_file(body)})
            for body in ("return 1", "return 2", "return (")
        ]
    assert good.passed and good.failure() is None
    assert not bad.passed and bad.failure().kind == FailureKind.WRONG_RESULT
    assert broken.failure().kind == FailureKind.SYNTAX
    assert good.isolation == ("own user" if PRIVILEGED else "shared user")
    assert {r.runner for r in (good, bad, broken)} == {"preloaded" if pool_kind else "fresh"}


async def test_a_run_sees_no_tests_of_others_no_root_and_no_network(
    pool_kind: bool, tmp_path: Path
) -> None:
    paper = probe_paper(tmp_path)
    body = """
        import os, socket, time
        print("began", time.time())
        print("uid", os.getuid())
        for path in ("/root", "/root/paper2code_test.py"):
            try:
                os.listdir(path) if path == "/root" else open(path).read()
                print("read", path)
            except OSError:
                print("denied", path)
        own = os.path.basename(os.path.dirname(os.getcwd()))  # /tmp/rcb-*/paper
        for d in [d for d in os.listdir("/tmp") if d.startswith("rcb-")]:
            try:
                os.listdir("/tmp/" + d)
                print("listed", "own" if d == own else "other", d)
            except OSError:
                pass
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2)
            print("network")
        except OSError:
            print("no network")
        home = os.environ["HOME"]
        print("home", home, os.stat(home).st_uid == os.getuid(), oct(os.stat(home).st_mode))
        time.sleep(0.5)
        print("ended", time.time())
        return 1
    """
    async with make_pool(2, pool_kind) as pool:
        runs = await _in_parallel(pool, paper, [probe_file(body)] * 2)
    for run in runs:
        assert run.passed, run.stderr
        out = run.stdout
        assert "no network" in out
        home = out.split("home ")[1].split("\n")[0].split()
        assert home[0].startswith("/tmp/.labcoat-home-") and home[1:] == ["True", "0o40700"]
        # another run's folder: each run has its own user, or (one user for all) no other
        # run of the paper is in flight; with its own user, not even its own parent
        assert "listed other" not in out
        assert "listed own" not in out or not PRIVILEGED
        if PRIVILEGED:
            assert "denied /root" in out and "denied /root/paper2code_test.py" in out
            assert int(out.split("uid ")[1].split()[0]) >= 2000
    if PRIVILEGED:  # each run in flight has a user of its own, and a HOME of its own
        assert len({r.stdout.split("uid ")[1].split()[0] for r in runs}) == 2
        assert len({r.stdout.split("home ")[1].split()[0] for r in runs}) == 2
    else:  # one user for all: the paper's runs take turns
        first, second = sorted(
            (float(r.stdout.split("began ")[1].split()[0]), float(r.stdout.split("ended ")[1]))
            for r in runs
        )
        assert first[1] <= second[0]


async def test_time_limit_and_nothing_outlives_a_run(pool_kind: bool, tmp_path: Path) -> None:
    paper = probe_paper(tmp_path)
    spawn = """
        import subprocess
        child = subprocess.Popen(["sleep", "300"], start_new_session=True)
        open("/tmp/leftover.pid", "w").write(str(child.pid))
        return 1
    """
    check = """
        import os
        pid = open("/tmp/leftover.pid").read()
        print("alive" if os.path.exists("/proc/" + pid) else "gone")
        return 1
    """
    async with make_pool(1, pool_kind) as pool:
        slow = await pool.grade(paper, {"probe_mod.py": probe_file("while True: pass")}, timeout=1)
        first = await pool.grade(paper, {"probe_mod.py": probe_file(spawn)})
        second = await pool.grade(paper, {"probe_mod.py": probe_file(check)})
    assert slow.timed_out and slow.failure().kind == FailureKind.TIMEOUT
    assert first.passed, first.stderr
    assert "gone" in second.stdout, second.stdout + second.stderr


async def test_reaching_for_the_tests_fails_the_run(pool_kind: bool, tmp_path: Path) -> None:
    paper = probe_paper(tmp_path, **{"probe_ref.py": "def probe():\n    return 1\n"})
    body = """
        name = "paper2code" + "_test.py"
        open(name).read()
        __import__("probe" + "_ref")
        return 1
    """
    filled = probe_file(body)
    lines = len(filled.splitlines())
    async with make_pool(1, pool_kind) as pool:
        watched = await pool.grade(
            paper, {"probe_mod.py": filled}, watch=Watch("probe_mod.py", 2, lines)
        )
        # the test script opens nothing of the kind itself: a clean run has no flags
        clean = await pool.grade(
            paper, {"probe_mod.py": probe_file("return 1")}, watch=Watch("probe_mod.py", 2, 2)
        )
    assert not watched.passed and watched.failure().kind == FailureKind.INTEGRITY
    assert watched.report is not None and watched.report["failures"] == 0  # tests passed
    flags = set(watched.runtime_flags)
    assert {"opened paper2code_test.py", "imported probe_ref"} <= flags
    assert flags <= {"opened paper2code_test.py", "imported probe_ref", "opened probe_ref.py"}
    assert clean.runtime_flags == () and clean.passed


async def test_missing_modules_are_named(pool_kind: bool, tmp_path: Path) -> None:
    test = "import unittest\nimport labcoat_missing_pkg\nimport probe_mod\n"
    paper = probe_paper(tmp_path, **{"paper2code_test.py": test})
    async with make_pool(1, pool_kind) as pool:
        with pytest.raises(MissingModulesError, match=r"labcoat_missing_pkg \(imported by "):
            await pool.check(paper)
        with pytest.raises(MissingModulesError):  # remembered, not rebuilt
            await pool.grade(paper, {"probe_mod.py": probe_file("return 1")})


@needs_one_user
async def test_without_root_runs_share_the_agent_user(
    pool_kind: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_SANDBOX_USERNS", "1")
    paper = probe_paper(tmp_path)
    async with make_pool(2, pool_kind) as pool:
        runs = await _in_parallel(pool, paper, [probe_file("return 1"), probe_file("return 3")])
    assert [r.passed for r in runs] == [True, False]
    assert {r.isolation for r in runs} == {"shared user"}


async def _in_parallel(pool: GradingPool, paper, files: list[str]):
    runs: list = [None] * len(files)

    async def one(i: int, text: str) -> None:
        runs[i] = await pool.grade(paper, {"probe_mod.py": text})

    async with anyio.create_task_group() as tg:
        for i, text in enumerate(files):
            tg.start_soon(one, i, text)
    return runs


SAME_AS_FRESH = """\
import json
import os
import sys
import unittest

import probe_mod

HERE = os.path.dirname(__file__)


class TestLikeAFreshInterpreter(unittest.TestCase):
    def test_script_context(self):
        self.assertTrue(os.path.isabs(__file__))
        self.assertEqual(sys.argv[0], "paper2code_test.py")
        self.assertEqual(os.getcwd(), HERE)
        self.assertEqual(sys.path[0], HERE)

    def test_the_papers_own_json_module_wins(self):
        self.assertEqual(json.MARK, "paper")

    def test_snippet(self):
        self.assertEqual(probe_mod.probe(), 1)


if __name__ == "__main__":
    print("main ran")
    unittest.main()
"""


async def test_a_run_sees_what_a_fresh_interpreter_would(pool_kind: bool, tmp_path: Path) -> None:
    paper = probe_paper(
        tmp_path, **{"paper2code_test.py": SAME_AS_FRESH, "json.py": 'MARK = "paper"\n'}
    )
    exits = "import sys\nprint('bye', file=sys.stderr)\nsys.exit(3)\n"
    async with make_pool(1, pool_kind) as pool:
        run = await pool.grade(paper, {"probe_mod.py": probe_file("return 1")})
        exiting = await pool.grade(paper, {"paper2code_test.py": exits})
    assert run.passed, run.stderr
    assert "main ran" in run.stdout and "Ran 3 tests" in run.stderr
    assert (exiting.exit_code, exiting.stderr.strip()) == (3, "bye")


def test_the_shared_pool_closes_idle_sandboxes_and_all_with_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from labcoat.families.researchcodebench._grading import shared_pool

    sandboxes = tmp_path / "sandboxes"
    monkeypatch.setenv("LABCOAT_SANDBOX_DIR", str(sandboxes))
    monkeypatch.setattr("labcoat.families.researchcodebench._grading.IDLE_CLOSE", 0.5, raising=True)
    first, second = probe_paper(tmp_path / "a", "first"), probe_paper(tmp_path / "b", "second")

    async def main() -> None:
        pool = shared_pool()
        assert shared_pool() is pool  # one per event loop
        assert (await pool.grade(first, {"probe_mod.py": probe_file("return 1")})).passed
        await asyncio.sleep(2.5)  # idle: closed by now
        assert list(sandboxes.iterdir()) == []
        assert (await pool.grade(second, {"probe_mod.py": probe_file("return 1")})).passed
        assert len(list(sandboxes.iterdir())) == 1  # open when the loop ends

    asyncio.run(main())
    assert list(sandboxes.iterdir()) == []

"""The cheats of `test_cheats.py`, graded past the static screen: what holds at run time.

The scorer refuses most cheats before they run (`_screen.py`). A screen of a dynamic
language can be evaded, so each cheat is also graded here the way the scorer grades a
completion it lets through (filled into the file, tests run in the protected sandbox,
the report checked against the script's tests), and must fail or be flagged there too.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import anyio
import pytest

from labcoat.families.researchcodebench import load_papers
from labcoat.families.researchcodebench._edits import placeholder_index
from labcoat.families.researchcodebench._environment import paper_environment
from labcoat.families.researchcodebench._grading import GradingPool, Watch
from labcoat.families.researchcodebench._grading import TestRun as Run
from labcoat.families.researchcodebench._scorer import _reference
from labcoat.families.researchcodebench._snippets import insert_completion, mask_snippet, reindent

from .helpers import write_pset
from .test_cheats import CHEATS, HONEST, _paper_files

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

# caught only by what the completion says, never at run time: the reference reached
# through the test script's module is a plain attribute read (a static flag labels it)
STATIC_ONLY = {"reference-through-main"}


async def _grade_all(root: Path) -> dict[str, Run]:
    pset = write_pset(root, {f"cheat-{name}": _paper_files(name) for name in CHEATS})
    papers = {p.id.removeprefix("cheat-"): p for p in load_papers(pset)}
    out: dict[str, Run] = {}
    async with GradingPool(2) as pool:

        async def grade(name: str) -> None:
            paper = papers[name]
            [af] = paper.parse_annotated()
            [snippet] = af.snippets
            masked = mask_snippet(af, snippet)
            code = textwrap.dedent(CHEATS[name][0]).strip("\n") + "\n"
            first = placeholder_index(masked.splitlines(), snippet) + 1
            last = first + len(reindent(code, snippet.indent).splitlines()) - 1
            filled = insert_completion(masked, snippet, code)
            out[name] = await pool.grade(
                paper,
                {af.path: filled},
                environment=paper_environment(paper),
                watch=Watch(af.path, first, last),
                reference=_reference(masked, snippet, af.path),
            )

        async with anyio.create_task_group() as group:
            for name in CHEATS:
                group.start_soon(grade, name)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return anyio.run(_grade_all, tmp_path_factory.mktemp("cheats-at-run-time"))


def test_the_honest_answer_passes(runs: dict[str, Run]) -> None:
    run = runs["honest"]
    assert run.passed and not run.runtime_flags, run.stderr
    assert sorted(run.report["outcomes"]) == [
        "__main__.TestProbe.test_matches_reference",
        "__main__.TestProbe.test_value",
    ]
    for name in ("honest-layer", "honest-in-place", "honest-setup-import"):
        run = runs[name]
        assert run.passed and not run.runtime_flags and not run.put_back, run.stderr
    assert runs["honest-in-place"].report["mutated"] == ["w"]  # as the reference does


@pytest.mark.parametrize("name", [n for n in CHEATS if n not in HONEST and n not in STATIC_ONLY])
def test_no_cheat_passes_at_run_time(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    expected = CHEATS[name][1]
    if "blocked" in expected:
        assert not run.passed, (name, run)
    else:
        assert run.runtime_flags, (name, run)


def _flags(runs: dict[str, Run], name: str) -> str:
    return " ".join(runs[name].runtime_flags)


def test_what_the_cheats_were_caught_by(runs: dict[str, Run]) -> None:
    """The run-time reasons recorded, so a reviewer sees why each one failed."""
    assert runs["fake-summary-exit"].report is None  # exited before its report
    assert "changed unittest.case.TestCase.assertTrue" in _flags(runs, "patch-unittest-asserts")
    assert "replaced numpy.allclose" in _flags(runs, "patch-numpy")
    assert "opened paper2code_test.py" in _flags(runs, "reads-the-tests")
    # the reference module is out of sys.modules while the tests run (round four)
    assert "KeyError: 'probe_ref'" in runs["patch-reference"].stderr
    assert "report" in _flags(runs, "forged-report")
    assert "result channel" in _flags(runs, "channel-spam")
    assert "sys._getframe" in _flags(runs, "frame-walk")
    assert "compiled code under the name of" in _flags(runs, "forged-report-via-gc")
    assert "ctypes.string_at" in _flags(runs, "memory-via-ctypes")
    assert "/proc/self/mem" in _flags(runs, "proc-mem-via-pathlike")
    assert "changed numpy.testing.assert_allclose" in _flags(runs, "patch-asserts-with-objects")
    assert "changed numpy.allclose" in _flags(runs, "patch-asserts-under-numpys-name")
    assert "changed numpy.testing.assert_allclose" in _flags(runs, "patch-and-restore")
    assert "changed unittest.case.TestCase.assertTrue" in _flags(runs, "patch-via-mock")
    # round three: raw memory through numpy views, no ctypes
    rewrite = _flags(runs, "bytecode-rewrite-via-numpy")
    assert "rewrote unittest.case.TestCase._callTestMethod in place" in rewrite
    assert "ended as skip, which the script does not allow" in rewrite
    forged = _flags(runs, "forged-report-via-proc-fd")
    assert "opened /proc as a descriptor" in forged
    # round four, past the static screen
    assert "a comparison was given a MaskedArray" in runs["masked-array"].stderr
    assert runs["zero-the-inputs"].put_back == ("x",)
    assert runs["zero-a-large-input"].put_back == ("x",)
    assert runs["zero-the-weights"].put_back == ("self.w_o", "x")
    assert "KeyError: 'probe_ref'" in runs["reference-via-logging"].stderr
    helper = _flags(runs, "replace-test-helper")
    assert "changed paper2code_test.py.expected" in helper
    assert "changed paper2code_test.py's TestProbe.test_direct" in helper
    # the script's module is an empty one while the tests run
    assert "has no attribute" in runs["replace-test-helper-via-modules"].stderr

"""The script's own tests, read outside the test process, and reports checked against them."""

from __future__ import annotations

import textwrap
from pathlib import Path

from labcoat.families.researchcodebench import load_papers
from labcoat.families.researchcodebench._tests import ScriptTests, check_report, script_tests

MINI = Path(__file__).parents[2] / "src/labcoat/suites/mini/researchcodebench"


def _tests(tmp_path: Path, text: str) -> ScriptTests:
    path = tmp_path / "paper2code_test.py"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    found = script_tests(path)
    assert found is not None
    return found


def test_test_methods_of_the_scripts_classes_inherited_ones_included(tmp_path: Path) -> None:
    found = _tests(
        tmp_path,
        """
        import unittest
        from unittest import TestCase as Case

        class Base(unittest.TestCase):
            def test_shared(self): ...
            def helper(self): ...

        class TestA(Base):
            def test_a(self): ...

        class TestB(Case):
            @unittest.skipIf(True, "no GPU")
            def test_gpu(self): ...

        class Mock:
            def test_like(self): ...

        def test_module_level(): ...

        if __name__ == "__main__":
            unittest.main(verbosity=2)
        """,
    )
    assert found.ids == {
        "__main__.Base.test_shared",
        "__main__.TestA.test_shared",
        "__main__.TestA.test_a",
        "__main__.TestB.test_gpu",
    }
    assert found.may_skip == {"__main__.TestB.test_gpu"}
    assert found.complete


def test_tests_the_script_picks_itself_are_a_lower_bound(tmp_path: Path) -> None:
    suite = """
        import unittest
        class TestA(unittest.TestCase):
            def test_a(self): ...
        if __name__ == "__main__":
            unittest.main(defaultTest="TestA.test_a")
        """
    assert not _tests(tmp_path, suite).complete
    mixin = """
        import unittest
        from helpers import Shared
        class TestA(Shared, unittest.TestCase):
            def test_a(self): ...
        unittest.main()
        """
    assert not _tests(tmp_path, mixin).complete
    mock = """
        import unittest, torch
        class Net(torch.nn.Module):
            def forward(self, x): ...
        class TestA(unittest.TestCase):
            def test_a(self): ...
        unittest.main()
        """
    assert _tests(tmp_path, mock).complete  # a base from elsewhere, but no tests of its own


def _report(outcomes: dict[str, list[str]]) -> dict:
    return {"ran": len(outcomes), "tests": len(outcomes), "outcomes": outcomes}


EXPECTED = ScriptTests(
    frozenset({"__main__.T.test_a", "__main__.T.test_b"}), frozenset({"__main__.T.test_b"})
)


def test_a_report_must_list_every_test_each_succeeded() -> None:
    ok = {"__main__.T.test_a": ["start", "success"], "__main__.T.test_b": ["start", "success"]}
    assert check_report(_report(ok), EXPECTED) == ()
    skipped_where_allowed = {**ok, "__main__.T.test_b": ["skip", "start"]}
    assert check_report(_report(skipped_where_allowed), EXPECTED) == ()
    skipped = {**ok, "__main__.T.test_a": ["skip", "start"]}
    assert "ended as skip" in " ".join(check_report(_report(skipped), EXPECTED))
    expected_failure = {**ok, "__main__.T.test_a": ["expected_failure", "start"]}
    assert check_report(_report(expected_failure), EXPECTED)
    fewer = {"__main__.T.test_a": ["start", "success"]}
    assert "1 of the script's 2" in " ".join(check_report(_report(fewer), EXPECTED))
    other = {**ok, "__main__.T.test_c": ["start", "success"]}
    assert "does not have" in " ".join(check_report(_report(other), EXPECTED))
    assert check_report({"ran": 7, "failures": 0, "tests": 7}, EXPECTED)  # no outcomes
    assert check_report({**_report(ok), "ran": 9}, EXPECTED)  # counts of its own


def test_the_bundled_oracle_reports_exactly_the_scripts_tests(mini_logs) -> None:
    """What an honest run reports is what the script's text says it has."""
    _, oracle, _ = mini_logs
    expected = {
        paper.id: script_tests(paper.folder / paper.test_script) for paper in load_papers(MINI)
    }
    for sample in oracle.samples or []:
        meta = sample.scores["researchcodebench_scorer"].metadata
        found = expected[meta["paper"]]
        assert found is not None and found.complete
        assert set(meta["report"]["outcomes"]) == found.ids, meta["snippet"]
        assert meta["integrity_flags"] == []

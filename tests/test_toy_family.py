"""A new family is its package and one registration line: a toy family from outside
labcoat's tree (tests/data/toy_family/toybench) is registered, its tasks are listed, one
is evaluated through labcoat's own task building, its score carries its provenance, and it
appears in the report under its spec's title."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log

from labcoat.families import _registry, discover, family_grader_version, register_family, select
from labcoat.families._provenance import PROVENANCE
from labcoat.grading import grader_version
from labcoat.report import write_report
from labcoat.report._context import family_order, family_title

DATA = Path(__file__).parent / "data" / "toy_family"
SUITE = DATA / "suite"


@pytest.fixture
def toybench(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(DATA))
    # the registry as it was, after the test
    monkeypatch.setattr(_registry, "FAMILY_MODULES", dict(_registry.FAMILY_MODULES))
    register_family("toybench", "toybench")  # the one line a new family adds
    return "toybench"


def test_a_registered_family_lists_evaluates_and_reports(toybench: str, tmp_path: Path) -> None:
    from labcoat._run._tasks import build_tasks

    found = discover(SUITE)
    assert [(e.family, e.id) for e in found] == [(toybench, "add-three"), (toybench, "add-two")]
    chosen = select(found, ["add-two"], toybench)

    tasks = build_tasks(str(SUITE), chosen, agent="oracle", sandbox="local")
    [log] = inspect_eval(tasks, model="mockllm/model", log_dir=str(tmp_path / "logs"))
    assert log.status == "success", log.error
    [sample] = read_eval_log(log.location).samples or []
    assert sample.id == "add-two"
    score = next(iter((sample.scores or {}).values()))
    assert score.value == {"raw": 1.0, "normalized": 1.0}

    record = (score.metadata or {})[PROVENANCE]
    assert record["family"] == toybench
    assert record["task"]["folder"] == str(SUITE / toybench / "add-two")
    assert record["task"]["files"] == 2 and len(record["task"]["hash"]) == 16
    assert record["inputs"]["answer"]["file"] == "answer.txt"
    # the grader version hashes the toy's own package, wherever it lies
    assert record["grader"] == grader_version(DATA / toybench)
    assert record["grader"] == family_grader_version(toybench)

    assert family_title(toybench) == "Toy Bench"
    assert family_order("rebench") < family_order(toybench) < family_order("elsewhere")
    html = write_report(tmp_path / "logs", tmp_path / "report.html").read_text()
    assert 'id="family-toybench"' in html and "<h2>Toy Bench</h2>" in html
    assert "add-two" in html


def test_a_family_package_without_its_spec_is_refused(
    monkeypatch: pytest.MonkeyPatch, toybench: str
) -> None:
    from labcoat._errors import LabcoatError
    from labcoat.families import family_spec

    register_family("notafamily", "labcoat.families._entry")  # a module with no SPEC
    with pytest.raises(LabcoatError, match=r"labcoat\.families\._entry: SPEC must be"):
        family_spec("notafamily")
    with pytest.raises(LabcoatError, match="a family name is an identifier"):
        register_family("no/slash", "toybench")


def test_eval_s_choices_become_each_family_s_own_arguments() -> None:
    """What eval's flags mean to a family is the family's (`FamilySpec.eval_args`); -T's
    value for the same argument wins over a default."""
    from labcoat.families import EvalChoices, eval_task_args

    chosen = EvalChoices(agent_in_sandbox=True, idea_hint=True, secrets_file="task.env")
    args = eval_task_args(chosen, {"paperbench": {"split": "dev"}})
    assert args == {
        "rebench": {"secrets": "task.env"},
        "researchcodebench": {"mode": "agent"},
        "paperbench": {"split": "dev"},
        "researchgym": {"idea_hint": True},
    }
    given = eval_task_args(chosen, {"researchcodebench": {"mode": "generate"}})
    assert given["researchcodebench"] == {"mode": "generate"}
    # no choice made: no family gets an argument it was not given
    assert eval_task_args(EvalChoices(), {}) == {}

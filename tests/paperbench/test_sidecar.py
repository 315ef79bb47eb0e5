"""The labcoat.yaml sidecar: addressing leaves, check kinds, and its validation errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from labcoat._errors import TaskDataError
from labcoat.families.paperbench import Sidecar, load_sidecar, parse_rubric, parse_sidecar
from labcoat.families.paperbench._sidecar import (
    CommandCheck,
    FileExistsCheck,
    JsonCompareCheck,
    JsonValueCheck,
    RegexCheck,
    format_json_key,
    parse_json_key,
)

from ._helpers import leaf, node

RUBRIC = parse_rubric(
    node(
        "root",
        node("impl", leaf("step"), leaf("dup")),
        node("run", leaf("dup", category="Code Execution"), leaf("ra", category="Result Analysis")),
    )
)


def sidecar(*checks: dict) -> Sidecar:
    return parse_sidecar({"version": 1, "checks": list(checks)}, RUBRIC, "labcoat.yaml")


def test_every_kind_parses() -> None:
    sc = sidecar(
        {"leaf": "step", "kind": "file_exists", "file": "src/step.py"},
        {"leaf": "step", "kind": "regex", "glob": "**/*.py", "pattern": r"def step\(", "note": "x"},
        {"path": "1.0", "kind": "command", "run": "python3 -c 'pass'", "timeout": 5},
        {
            "path": [1, 1],
            "kind": "json_value",
            "file": "results/m.json",
            "key": "a.b[0]",
            "value": 0.5,
            "rel_tolerance": 0.1,
        },
        {
            "leaf": "ra",
            "kind": "json_compare",
            "file": "results/m.json",
            "left": "x",
            "op": "<",
            "right": ["y", 0],
            "factor": 0.5,
        },
    )
    checks = sc.checks
    assert [type(c) for c in checks[(0, 0)]] == [FileExistsCheck, RegexCheck]
    assert checks[(0, 0)][1].note == "x"
    assert isinstance(checks[(1, 0)][0], CommandCheck) and checks[(1, 0)][0].timeout == 5
    value = checks[(1, 1)][0]
    assert isinstance(value, JsonValueCheck) and value.key == ("a", "b", 0)
    compare = checks[(1, 1)][1]
    assert isinstance(compare, JsonCompareCheck) and compare.right == ("y", 0)
    assert compare.factor == 0.5
    assert sc.checked_leaves(RUBRIC) == 3


def test_default_view_follows_the_category() -> None:
    sc = sidecar(
        {"leaf": "step", "kind": "file_exists", "file": "a"},
        {"leaf": "ra", "kind": "file_exists", "file": "a"},
        {"leaf": "ra", "kind": "file_exists", "file": "a", "where": "submission"},
    )
    checks = sc.checks
    assert checks[(0, 0)][0].view_for("Code Development") == "submission"
    assert checks[(1, 1)][0].view_for("Result Analysis") == "executed"
    assert checks[(1, 1)][1].view_for("Result Analysis") == "submission"


@pytest.mark.parametrize(
    ("entry", "field", "fragment"),
    [
        ({"leaf": "nope", "kind": "file_exists", "file": "a"}, "checks[0].leaf", "no node with id"),
        ({"leaf": "dup", "kind": "file_exists", "file": "a"}, "checks[0].leaf", "is not unique"),
        ({"leaf": "impl", "kind": "file_exists", "file": "a"}, "checks[0].leaf", "is not a leaf"),
        ({"path": "0.9", "kind": "file_exists", "file": "a"}, "checks[0].path", "no node at"),
        ({"path": "x", "kind": "file_exists", "file": "a"}, "checks[0].path", "not a tree path"),
        ({"kind": "file_exists", "file": "a"}, "checks[0]", "exactly one of `leaf`"),
        ({"leaf": "step", "kind": "nope"}, "checks[0].kind", "must be one of"),
        ({"leaf": "step", "kind": "file_exists", "fiel": "a"}, "checks[0]", "unknown key(s)"),
        ({"leaf": "step", "kind": "file_exists"}, "checks[0]", "exactly one of `file` or `glob`"),
        (
            {"leaf": "step", "kind": "regex", "file": "a", "pattern": "("},
            "checks[0].pattern",
            "inv",
        ),
        ({"leaf": "step", "kind": "file_exists", "file": "a", "where": "x"}, "checks[0].where", ""),
        (
            {"leaf": "ra", "kind": "json_value", "file": "m", "key": "a", "value": 1, "min": 0},
            "checks[0]",
            "either `value`",
        ),
        (
            {
                "leaf": "ra",
                "kind": "json_value",
                "file": "m",
                "key": "a",
                "value": "s",
                "tolerance": 1,
            },
            "checks[0].value",
            "needs a numeric value",
        ),
        (
            {"leaf": "ra", "kind": "json_value", "file": "m", "key": "a..b", "value": 1},
            "checks[0].key",
            "malformed",
        ),
        (
            {
                "leaf": "ra",
                "kind": "json_compare",
                "file": "m",
                "left": "a",
                "op": "==",
                "right": "b",
            },
            "checks[0].op",
            "must be one of",
        ),
        ({"leaf": "step", "kind": "command", "run": ""}, "checks[0].run", "non-empty string"),
        (
            {"leaf": "step", "kind": "command", "run": "x", "timeout": -1},
            "checks[0].timeout",
            "non-negative",
        ),
    ],
)
def test_sidecar_errors(entry: dict, field: str, fragment: str) -> None:
    with pytest.raises(TaskDataError) as err:
        sidecar(entry)
    assert err.value.field == field
    assert fragment in err.value.message


def test_top_level_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskDataError, match="unknown key"):
        parse_sidecar({"checks": [], "chekcs": []}, RUBRIC)
    with pytest.raises(TaskDataError, match="only version 1"):
        parse_sidecar({"version": 2}, RUBRIC)
    with pytest.raises(TaskDataError, match="must be a list"):
        parse_sidecar({"checks": {"a": 1}}, RUBRIC)
    file = tmp_path / "labcoat.yaml"
    file.write_text("checks: [unclosed\n", encoding="utf-8")
    with pytest.raises(TaskDataError, match="not valid YAML"):
        load_sidecar(file, RUBRIC)


def test_load_from_yaml_file(tmp_path: Path) -> None:
    file = tmp_path / "labcoat.yaml"
    file.write_text(
        yaml.safe_dump(
            {"version": 1, "checks": [{"leaf": "step", "kind": "file_exists", "file": "x.py"}]}
        ),
        encoding="utf-8",
    )
    sc = load_sidecar(file, RUBRIC)
    assert sc.file == file
    assert sc.checks[(0, 0)][0].source == "labcoat.yaml: checks[0]"
    assert load_sidecar(None, RUBRIC).checks == {}


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("a", ("a",)),
        ("a.b", ("a", "b")),
        ("a[0].b", ("a", 0, "b")),
        ("[2]", (2,)),
        ("table1.tail-avg.excess_risk", ("table1", "tail-avg", "excess_risk")),
    ],
)
def test_json_keys(text: str, key: tuple) -> None:
    assert parse_json_key(text) == key
    assert parse_json_key(format_json_key(key)) == key


@pytest.mark.parametrize("text", ["", ".a", "a.", "a..b", "a[x]"])
def test_bad_json_keys(text: str) -> None:
    with pytest.raises(ValueError):
        parse_json_key(text)

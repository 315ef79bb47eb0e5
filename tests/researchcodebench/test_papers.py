"""Loading `papers.yaml`, checking the folders, and `discover`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from labcoat._errors import TaskDataError
from labcoat.families import discover as registry_discover
from labcoat.families.researchcodebench import discover, find_pset, load_papers

CHECKOUT = Path(__file__).parent / "data" / "checkout"
PSET = CHECKOUT / "pset"


def test_root_may_be_pset_or_checkout():
    assert find_pset(PSET) == PSET
    assert find_pset(CHECKOUT) == PSET
    assert find_pset(CHECKOUT.parent) is None
    assert [p.id for p in load_papers(CHECKOUT)] == [p.id for p in load_papers(PSET)]


def test_fields_are_normalised():
    dyt, two = load_papers(PSET)
    assert dyt.id == "DyTiny" and dyt.title == "A Tiny Dynamic Tanh"
    assert dyt.annotated_files == ("dynamic_tanh.py",)  # trailing space dropped
    assert dyt.context_files == ()
    assert dyt.paper_file == "paper2code_paper.tex"
    assert dyt.metadata["arxiv_date"] == "2025-03-13"  # a YAML date, kept as ISO text
    assert dyt.metadata["venue"] == "CVPR2025"
    assert two.annotated_files == ("lib/ops.py", "model.py")
    assert two.context_files == ("lib/util.py",)
    assert two.paper_file == "paper2code_paper.md"
    assert "last_commit_date" not in two.metadata  # absent fields stay absent
    assert two.reference_files() == ("model_ref.py",)
    assert two.render_context() == "## lib/util.py\n\ndef identity(x):\n    return x\n\n"


def test_discover_one_entry_per_paper():
    entries = discover(CHECKOUT)
    assert [(e.id, e.family, e.samples) for e in entries] == [
        ("DyTiny", "researchcodebench", 3),
        ("two-files", "researchcodebench", 3),
    ]
    dyt, two = entries
    assert dyt.extra["lines"] == 3 + 1 + 1  # init (3) counts alpha's line again
    assert dyt.extra["max_depth"] == 2
    assert two.extra["lines"] == 3
    assert two.path == PSET / "two-files"
    assert two.to_json()["annotated_files"] == ["lib/ops.py", "model.py"]


def test_discover_elsewhere_is_empty(tmp_path: Path):
    assert discover(tmp_path) == []
    assert registry_discover(tmp_path, ["researchcodebench"]) == []


def test_registry_finds_family_subfolder(tmp_path: Path):
    shutil.copytree(CHECKOUT, tmp_path / "researchcodebench")
    ids = [e.id for e in registry_discover(tmp_path, ["researchcodebench"])]
    assert ids == ["DyTiny", "two-files"]


@pytest.fixture
def pset(tmp_path: Path) -> Path:
    shutil.copytree(PSET, tmp_path / "pset")
    return tmp_path / "pset"


def edit(pset: Path, index: int, **changes: object) -> None:
    path = pset / "papers.yaml"
    data = yaml.safe_load(path.read_text())
    for key, value in changes.items():
        if value is _DELETE:
            del data[index][key]
        else:
            data[index][key] = value
    path.write_text(yaml.safe_dump(data))


_DELETE = object()


def error_of(pset: Path) -> str:
    with pytest.raises(TaskDataError) as info:
        load_papers(pset)
    return str(info.value)


@pytest.mark.parametrize(
    ("index", "changes", "expected"),
    [
        (
            1,
            {"annotated_file_paths": ["lib/ops.py", "x.py"]},
            "[1].annotated_file_paths: file 'x.py' not found in pset/two-files/",
        ),
        (
            0,
            {"context_file_paths": "ctx.py"},
            "[0].context_file_paths: file 'ctx.py' not found in pset/DyTiny/",
        ),
        (0, {"annotated_file_paths": None}, "[0].annotated_file_paths: no annotated file given"),
        (
            0,
            {"annotated_file_paths": {"a": 1}},
            "[0].annotated_file_paths: expected a path, a list of paths, or null",
        ),
        (
            0,
            {"annotated_file_paths": "../two-files/model.py"},
            "[0].annotated_file_paths: '../two-files/model.py' is not a relative path",
        ),
        (0, {"id": "missing"}, "[0].id: folder pset/missing/ not found"),
        (0, {"id": _DELETE}, "[0].id: missing or not a string"),
        (1, {"title": 7}, "[1].title: missing or not a string"),
        (1, {"id": "DyTiny"}, "[1].id: duplicate id 'DyTiny' (also [0])"),
    ],
)
def test_entry_errors_name_file_and_field(pset: Path, index, changes, expected):
    edit(pset, index, **changes)
    assert error_of(pset).startswith(f"{pset / 'papers.yaml'}: {expected}")


def test_missing_paper_text_and_test_script(pset: Path):
    (pset / "DyTiny" / "paper2code_paper.tex").unlink()
    assert error_of(pset).endswith(
        "[0]: no paper2code_paper.tex or paper2code_paper.md in pset/DyTiny/"
    )
    shutil.copy(PSET / "DyTiny" / "paper2code_paper.tex", pset / "DyTiny")
    (pset / "two-files" / "paper2code_test.py").unlink()
    assert error_of(pset).endswith("[1]: no paper2code_test.py in pset/two-files/")


def test_not_yaml_or_not_a_list(pset: Path):
    (pset / "papers.yaml").write_text("- id: a\n  title: [unclosed\n")
    assert "papers.yaml: line 3, column 1: not valid YAML" in error_of(pset)
    (pset / "papers.yaml").write_text("id: a\n")
    assert error_of(pset).endswith("expected a non-empty list of papers")


def test_discover_reports_bad_markers_with_file_and_line(pset: Path):
    model = pset / "two-files" / "model.py"
    model.write_text(model.read_text().replace('# </paper2code name="shift">', ""))
    with pytest.raises(TaskDataError) as info:
        discover(pset)
    assert str(info.value).startswith(f"{model}:8: snippet 'shift' is opened but never closed")


def test_discover_rejects_a_paper_without_snippets(pset: Path):
    ops = pset / "two-files" / "lib" / "ops.py"
    model = pset / "two-files" / "model.py"
    for f in (ops, model):
        f.write_text("".join(x for x in f.read_text().splitlines(True) if "paper2code" not in x))
    with pytest.raises(TaskDataError, match="no <paper2code> snippets"):
        discover(pset)

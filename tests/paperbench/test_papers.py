"""Paper folders, blacklists, splits and discovery in the native layout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from labcoat._errors import LabcoatError, TaskDataError
from labcoat.families import discover as discover_all
from labcoat.families.paperbench import (
    discover,
    find_paper_dirs,
    load_paper,
    load_papers,
    read_blacklist,
    read_split,
    select_papers,
)

from ._helpers import PEER, PEER_LEAVES, PEER_PAPERS


def test_load_peer_paper() -> None:
    paper = load_paper(PEER_PAPERS / "self-composing-policies")
    assert paper.id == "self-composing-policies"
    assert paper.title == "Self-Composing Policies for Scalable Continual Reinforcement Learning"
    assert paper.blacklist == ("https://github.com/mikelma/componet",)
    # upstream keeps the texts in Git LFS; the peer copy has none, and that is not an error
    assert paper.paper_md is None and paper.addendum is None and paper.judge_addendum is None
    assert paper.sidecar_path is None and paper.reference_submission is None
    assert paper.agent_files() == []


def test_blacklist_none_means_empty(tmp_path: Path) -> None:
    assert load_paper(PEER_PAPERS / "self-expansion").blacklist == ()
    file = tmp_path / "blacklist.txt"
    file.write_text("None\n\n", encoding="utf-8")
    assert read_blacklist(file) == ()
    file.write_text("\nhttps://a.example/x\n# a comment\nhttps://b.example\n", encoding="utf-8")
    assert read_blacklist(file) == ("https://a.example/x", "https://b.example")
    assert read_blacklist(tmp_path / "absent.txt") == ()


@pytest.mark.parametrize("layout", ["data", "papers", "one"])
def test_discover_accepts_three_layouts(layout: str, tmp_path: Path) -> None:
    data = tmp_path / "paperbench"
    shutil.copytree(PEER, data)
    for paper in (data / "papers").iterdir():  # the peer copy holds no paper texts
        (paper / "paper.md").write_text("# Paper\n", encoding="utf-8")
    root = {"data": data, "papers": data / "papers", "one": data / "papers" / "self-expansion"}
    entries = discover(root[layout])
    expected = ["self-expansion"] if layout == "one" else sorted(PEER_LEAVES)
    assert [e.id for e in entries] == expected
    for e in entries:
        assert e.family == "paperbench" and e.problem is None
        assert e.samples == 1
        assert e.extra["leaves"] == PEER_LEAVES[e.id]
        assert e.to_json()["leaves"] == PEER_LEAVES[e.id]


def test_a_paper_without_its_text_is_listed_with_the_reason() -> None:
    """The agent is told the paper is in its sandbox: no paper.md or paper.pdf, no run."""
    [entry] = discover(PEER_PAPERS / "self-expansion")
    assert entry.problem is not None and "paper.md: file not found" in entry.problem


def test_discover_is_empty_for_other_formats(tmp_path: Path) -> None:
    (tmp_path / "some_task").mkdir()
    (tmp_path / "some_task" / "task.yaml").write_text("x: 1\n", encoding="utf-8")
    assert discover(tmp_path) == []
    assert discover(tmp_path / "missing") == []
    assert find_paper_dirs(tmp_path) == []


def test_registry_finds_the_family() -> None:
    entries = discover_all(PEER, families=["paperbench"])
    assert sorted(e.id for e in entries) == sorted(PEER_LEAVES)


def copy_paper(tmp_path: Path, paper_id: str = "semantic-self-consistency") -> Path:
    dest = tmp_path / "papers" / paper_id
    shutil.copytree(PEER_PAPERS / paper_id, dest)
    (dest / "paper.md").write_text("# Paper\n", encoding="utf-8")
    return dest


def test_bad_config(tmp_path: Path) -> None:
    paper = copy_paper(tmp_path)
    (paper / "config.yaml").write_text("title: no id\n", encoding="utf-8")
    with pytest.raises(TaskDataError) as err:
        load_paper(paper)
    assert err.value.field == "id"
    (paper / "config.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(TaskDataError, match="not valid YAML"):
        load_paper(paper)


def test_duplicate_paper_ids(tmp_path: Path) -> None:
    copy_paper(tmp_path, "semantic-self-consistency")
    other = copy_paper(tmp_path, "self-expansion")
    (other / "config.yaml").write_text("id: semantic-self-consistency\n", encoding="utf-8")
    with pytest.raises(TaskDataError, match="is also the id of"):
        load_papers(tmp_path)


def test_discover_isolates_a_broken_paper(tmp_path: Path) -> None:
    paper = copy_paper(tmp_path)
    copy_paper(tmp_path, "self-expansion")
    (paper / "rubric.json").write_text('{"id": "x"}', encoding="utf-8")
    fine, broken = discover(tmp_path)  # in folder order
    assert broken.id == paper.name and broken.problem is not None
    assert "rubric.json: requirements: missing" in broken.problem
    assert fine.id == "self-expansion" and fine.problem is None


def test_optional_texts_are_read(tmp_path: Path) -> None:
    paper_dir = copy_paper(tmp_path)
    (paper_dir / "paper.md").write_text("# Paper\n", encoding="utf-8")
    (paper_dir / "addendum.md").write_text("notes\n", encoding="utf-8")
    (paper_dir / "judge.addendum.md").write_text("judge notes\n", encoding="utf-8")
    (paper_dir / "assets").mkdir()
    paper = load_paper(paper_dir)
    assert paper.paper_md == "# Paper\n"
    assert paper.addendum == "notes\n"
    assert paper.judge_addendum == "judge notes\n"
    assert paper.assets_dir == paper_dir / "assets"
    # the judge addendum, rubric and blacklist are not for the agent
    assert [p.name for p in paper.agent_files()] == ["paper.md", "addendum.md", "assets"]


def test_splits(tmp_path: Path) -> None:
    split = tmp_path / "dev.txt"
    split.write_text("self-expansion\n\n# comment\nsemantic-self-consistency  \n", encoding="utf-8")
    ids = read_split(split)
    assert ids == ["self-expansion", "semantic-self-consistency"]
    papers = select_papers(load_papers(PEER), ids)
    assert [p.id for p in papers] == ids
    with pytest.raises(LabcoatError, match="no paper has the id or folder name nope"):
        select_papers(load_papers(PEER), ["nope"])
    with pytest.raises(TaskDataError, match="split file not found"):
        read_split(tmp_path / "absent.txt")

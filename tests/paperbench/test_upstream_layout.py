"""Upstream's data as cloned, with and without its Git LFS content: splits by folder name or
config id, unknown ids as errors, LFS pointers named by every command before any work,
broken papers isolated, sidecars validated before the agent starts, Code-Dev in tables."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import run_cli_captured as run
from inspect_ai._util.error import PrerequisiteError

from labcoat._errors import LabcoatError
from labcoat.families.paperbench import discover, paperbench
from labcoat.suites import resolve_target

from ._upstream_fixture import make_data, strip_lfs_content

MINI_PAPERS = resolve_target("mini") / "paperbench" / "papers"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return make_data(tmp_path / "data")


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """The same data as a clone without `git lfs pull` holds it."""
    return make_data(tmp_path / "bare", lfs=False)


def splits(data: Path, name: str) -> str:
    return str(data / "experiments" / "splits" / f"{name}.txt")


# --- splits -------------------------------------------------------------------------------------


def test_splits_name_papers_by_folder_or_config_id(data: Path) -> None:
    every = paperbench(target=str(data), agent="noop", judge="dummy", split=splits(data, "all"))
    assert [s.id for s in every.dataset] == ["alpha", "beta-thing"]  # `beta-things` is a folder
    dev = paperbench(target=str(data), agent="noop", judge="dummy", split=splits(data, "dev"))
    assert [s.id for s in dev.dataset] == ["beta-thing"]
    both = paperbench(
        target=str(data),
        agent="noop",
        judge="dummy",
        tasks=["beta-things"],
        split=splits(data, "all"),
    )
    assert [s.id for s in both.dataset] == ["beta-thing"]


def test_an_id_that_matches_no_paper_is_an_error_for_inspect(data: Path) -> None:
    with pytest.raises(LabcoatError, match="no paper has the id or folder name beta-thingz") as ex:
        paperbench(target=str(data), agent="noop", judge="dummy", split=splits(data, "typo"))
    # `inspect eval` prints a PrerequisiteError as one line, without a traceback
    assert isinstance(ex.value, PrerequisiteError)
    assert "typo.txt" in str(ex.value)


def test_an_id_that_matches_no_paper_is_an_error_for_labcoat_eval(
    capsys: pytest.CaptureFixture[str], data: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    code, _, err = run(
        capsys, "eval", str(data), "--family", "paperbench", "--agent", "noop",
        "-T", f"split={splits(data, 'typo')}", "-T", "judge=dummy", "--log-dir", str(logs),
    )  # fmt: skip
    assert code == 2 and "beta-thingz" in err and "Traceback" not in err
    assert not list(logs.rglob("*.eval"))


def test_labcoat_eval_runs_a_split_in_code_dev_and_says_so(
    capsys: pytest.CaptureFixture[str], data: Path, tmp_path: Path, monkeypatch
) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap")
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run(
        capsys, "eval", str(data), "--family", "paperbench", "--agent", "noop", "--json",
        "-T", f"split={splits(data, 'all')}", "-T", "judge=dummy", "-T", "code_dev=true",
        "--log-dir", str(tmp_path / "logs"),
    )  # fmt: skip
    assert code == 0, err
    results = json.loads(out[out.index("[\n") :])  # after Inspect's own display
    assert [(r["task"], r["variant"], r["errors"]) for r in results] == [
        ("alpha", "Code-Dev", 0),
        ("beta-thing", "Code-Dev", 0),
    ]
    assert all(r["normalized"] == 1.0 for r in results)  # the dummy judge passes every leaf


# --- Git LFS pointers ---------------------------------------------------------------------------


def test_without_lfs_content_list_names_the_pointers(
    capsys: pytest.CaptureFixture[str], bare: Path
) -> None:
    code, _, err = run(capsys, "list", str(bare), "--family", "paperbench")
    assert code == 2
    lines = [line for line in err.splitlines() if "git lfs pull" in line]
    assert len(lines) == 2
    assert "papers/alpha: paper.md, paper.pdf, addendum.md, judge.addendum.md" in err
    assert "assets/fig1.png" in err


def test_without_lfs_content_eval_stops_before_any_work(
    capsys: pytest.CaptureFixture[str], bare: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    code, out, _ = run(
        capsys, "eval", str(bare), "--family", "paperbench", "--agent", "noop", "--json",
        "-T", "judge=dummy", "--log-dir", str(logs),
    )  # fmt: skip
    assert code != 0
    results = json.loads(out[out.index("[\n") :])
    assert [r["task"] for r in results] == ["alpha", "beta-things"]
    assert all("git lfs pull" in r["problem"] and r["runs"] == 0 for r in results)
    assert not list(logs.rglob("*.eval"))
    with pytest.raises(LabcoatError, match="git lfs pull"):
        paperbench(target=str(bare), agent="noop", judge="dummy")


def test_check_names_pointers_inside_and_outside_the_paper_folders(
    capsys: pytest.CaptureFixture[str], bare: Path, data: Path
) -> None:
    code, out, _ = run(capsys, "check", str(bare), "--family", "paperbench", "--no-build")
    assert code == 2 and "paper.md" in out and "git lfs pull" in out
    # the papers have their content, the JudgeEval submissions do not
    for tar in (data / "judge_eval").rglob("submission.tar"):
        tar.write_text(bare.joinpath(tar.relative_to(data)).read_text())
    code, out, _ = run(capsys, "check", str(data), "--family", "paperbench", "--no-build")
    assert code == 2
    assert "alpha (paperbench): lfs:" in out and "judge_eval/alpha/0/submission.tar" in out
    assert "beta-thing (paperbench): lfs:" in out


def test_paper_texts_read_as_pointers_are_errors_not_content(data: Path) -> None:
    from labcoat.families.paperbench import load_paper

    paper = load_paper(data / "papers" / "alpha")
    assert paper.paper_md is not None and "step down the gradient" in paper.paper_md
    strip_lfs_content(data)
    with pytest.raises(LabcoatError, match=r"paper\.md: a Git LFS pointer.*git lfs pull"):
        _ = paper.paper_md


# --- broken papers and sidecars -----------------------------------------------------------------


def test_a_typo_in_a_sidecar_stops_the_paper_before_the_agent_starts(tmp_path: Path) -> None:
    papers = tmp_path / "papers"
    shutil.copytree(MINI_PAPERS, papers)
    sidecar = papers / "tail-averaged-sgd" / "labcoat.yaml"
    sidecar.write_text(sidecar.read_text().replace("leaf: cd-eigenvalues", "leaf: cd-eigenvalue"))
    broken, fine = sorted(discover(papers), key=lambda e: e.problem is None)
    assert broken.id == "tail-averaged-sgd" and fine.id == "spectral-shrinkage"
    assert "labcoat.yaml: checks[0].leaf: no node with id 'cd-eigenvalue'" in str(broken.problem)
    with pytest.raises(LabcoatError, match="cd-eigenvalue"):
        paperbench(target=str(papers), agent="noop")
    assert [
        s.id
        for s in paperbench(target=str(papers), agent="noop", tasks="spectral-shrinkage").dataset
    ] == ["spectral-shrinkage"]


def test_the_check_judge_refuses_papers_without_checks(data: Path) -> None:
    with pytest.raises(LabcoatError, match=r"needs a labcoat.yaml of checks.*alpha, beta-thing"):
        paperbench(target=str(data), agent="noop", judge="check")

"""Provenance on every score: task content hashes, the record's columns, the results card
and the warning over a table whose runs mix task contents, graders, judges or machines."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalSample
from inspect_ai.scorer import Score

from labcoat.analysis import mixed_provenance, read_runs, results_card
from labcoat.analysis._provenance import provenance_fields
from labcoat.families._provenance import PROVENANCE, provenance_record
from labcoat.families._provenance_hash import folder_hash, top_files_hash
from labcoat.families._provenance_host import PACKAGE, cpu_model, labcoat_build
from labcoat.families._score import research_score
from labcoat.report import write_report
from labcoat.report._card import card_markdown

from ._synthetic import Sample, write_log


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _hash(root: Path) -> str:
    folder_hash.cache_clear()  # the cache is per process; these folders change under it
    return folder_hash(str(root)).hash


# --- task content hashes -------------------------------------------------------------


def test_task_hash_follows_contents_and_paths_not_caches(tmp_path: Path) -> None:
    task = _tree(tmp_path / "t", {"a.py": "x = 1\n", "data/b.csv": "1,2\n"})
    first = _hash(task)
    assert first == _hash(task)  # the same files, the same hash
    # Python's caches and the VCS's records are not task content
    _tree(task, {"__pycache__/a.cpython-311.pyc": "junk", "data/.git/HEAD": "ref"})
    assert _hash(task) == first
    (task / "data" / "b.csv").write_text("1,3\n")  # one byte of data
    changed = _hash(task)
    assert changed != first
    (task / "data" / "b.csv").rename(task / "data" / "c.csv")  # same bytes, another name
    assert _hash(task) not in (first, changed)
    info = folder_hash(str(task))
    assert (info.files, info.bytes) == (2, len("x = 1\n1,3\n"))


def test_a_symlink_counts_as_its_target_text_and_is_not_followed(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", {"big.bin": "data"})
    task = _tree(tmp_path / "t", {"a.py": "x = 1\n"})
    (task / "data").symlink_to(outside)
    first = _hash(task)
    (outside / "big.bin").write_text("other data")  # behind the link: not the task's files
    assert _hash(task) == first
    (task / "data").unlink()
    (task / "data").symlink_to(tmp_path / "elsewhere")
    assert _hash(task) != first


def test_a_pset_hash_covers_its_own_files_not_its_papers(tmp_path: Path) -> None:
    pset = _tree(tmp_path / "pset", {"papers.yaml": "- id: p\n", "p/code.py": "x = 1\n"})
    first = top_files_hash(str(pset))
    (pset / "p" / "code.py").write_text("x = 2\n")
    top_files_hash.cache_clear()
    assert top_files_hash(str(pset)) == first
    (pset / "papers.yaml").write_text("- id: q\n")
    top_files_hash.cache_clear()
    assert top_files_hash(str(pset)) != first


# --- the record ---------------------------------------------------------------------------


def test_labcoat_build_names_this_checkouts_commit() -> None:
    head = subprocess.run(
        ["git", "-C", str(PACKAGE), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    if head.returncode != 0:
        pytest.skip("labcoat is not run from a git checkout here")
    build = labcoat_build()
    assert build["commit"] == head.stdout.strip()
    assert isinstance(build["dirty"], bool)


def test_a_score_outside_a_sample_still_records_the_machine() -> None:
    score = research_score(1.0, 1.0)
    record = score.metadata[PROVENANCE]
    assert record["family"] is None and record["task"] is None and record["grader"] is None
    assert record["hardware"]["cpu"] == cpu_model()
    assert record["hardware"]["cpus"] == os.cpu_count()
    assert record["labcoat"]["version"]
    assert provenance_record()["hardware"] == record["hardware"]


def _sample(provenance: dict[str, Any], sandbox: dict[str, Any] | None = None) -> EvalSample:
    meta = {PROVENANCE: provenance, "sandbox": sandbox or {"isolation": "root"}}
    score = Score(value={"raw": 1.0, "normalized": 1.0}, metadata=meta)
    return EvalSample(id="s", epoch=1, input="x", target="", scores={"s": score})


def test_a_regraded_sample_keeps_its_runs_machine_and_takes_the_new_grading() -> None:
    ran = _sample(
        {
            "task": {"hash": "aaaa"},
            "grader": {"labcoat": "0.1", "code": "old"},
            "hardware": {"cpu": "CPU A", "gpu": "H100", "gpus": 1},
            "limits": {"sample": {"time": 600}},
        },
        {"isolation": "rootless-separate-users", "limits": "cgroup v2"},
    )
    regraded = _sample(
        {
            "task": {"hash": "bbbb"},
            "grader": {"labcoat": "0.2", "code": "new"},
            "hardware": {"cpu": "CPU B"},
            "limits": {"sample": {"time": None}},
        }
    )
    fields = provenance_fields(ran, regraded, {"sample_time_limit": None})
    assert fields["task_hash"] == "bbbb" and fields["grader_version"] == "0.2+new"
    assert fields["cpu"] == "CPU A" and fields["hardware_class"] == "CPU A / H100"
    assert fields["isolation"] == "rootless-separate-users"
    assert fields["limit_mechanism"] == "cgroup v2"
    assert fields["sample_time_limit"] == 600


# --- tables, the card and the warnings ----------------------------------------------------


def _provenance(task_hash: str, cpu: str = "CPU A", judge: str | None = None) -> dict:
    inputs = {"judge": {"name": judge, "model": None, "prompt": None}} if judge else {}
    return {
        "labcoat": {"version": "0.1.0", "commit": "abc", "dirty": False},
        "task": {"hash": task_hash, "files": 3},
        "grader": {"labcoat": "0.1.0", "code": "g1"},
        "inputs": inputs,
        "hardware": {"cpu": cpu, "cpus": 8, "memory_gb": 32.0, "gpus": 0},
    }


def _log(folder: Path, *samples: Sample, family: str = "rebench") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_log(folder, list(samples), family=family)


def _run(task_hash: str, epoch: int = 1, **kw: Any) -> Sample:
    return Sample(
        task_id="t1", epoch=epoch, score_metadata={PROVENANCE: _provenance(task_hash, **kw)}
    )


def test_runs_of_one_task_with_different_contents_are_a_mix(tmp_path: Path) -> None:
    _log(tmp_path / "one", _run("aaaa", 1), _run("aaaa", 2))
    _log(tmp_path / "two", _run("bbbb"))
    runs = read_runs([tmp_path / "one", tmp_path / "two"]).runs
    assert list(runs["task_hash"]) == ["aaaa", "aaaa", "bbbb"]
    [mix] = mixed_provenance(runs)
    assert (mix.what, mix.scope, mix.values) == (
        "task contents",
        "rebench t1",
        (("aaaa", 2), ("bbbb", 1)),
    )
    assert mixed_provenance(runs[runs["task_hash"] == "aaaa"]) == []


def test_hardware_classes_and_judges_mix_too(tmp_path: Path) -> None:
    _log(tmp_path / "a", _run("aaaa", cpu="CPU A", judge="check"), family="paperbench")
    _log(tmp_path / "b", _run("aaaa", cpu="CPU B", judge="llm"), family="paperbench")
    mixes = mixed_provenance(read_runs(tmp_path).runs)
    assert {(m.what, m.scope) for m in mixes} == {
        ("judges", "paperbench"),
        ("hardware classes", "all runs"),
    }


def test_runs_without_provenance_are_no_mix_and_are_counted(tmp_path: Path) -> None:
    _log(tmp_path / "a", _run("aaaa"), Sample(task_id="t1", epoch=2))
    data = read_runs(tmp_path)
    assert mixed_provenance(data.runs) == []
    assert results_card(data).unrecorded == 1


def test_the_report_opens_with_the_card_and_warns_on_the_mixed_tables(tmp_path: Path) -> None:
    _log(tmp_path / "one", _run("aaaa"))
    _log(tmp_path / "two", _run("bbbb"))
    html = write_report([tmp_path / "one", tmp_path / "two"], tmp_path / "r.html").read_text()
    assert html.index('id="card"') < html.index('id="leaderboard"')
    family = html[html.index('id="family-rebench"') :]
    tasks = family[: family.index("</table>")]
    assert "This table mixes versions" in tasks and "2 different task contents" in tasks
    same = write_report(tmp_path / "one", tmp_path / "s.html").read_text()
    assert "aaaa" in same and "mixes versions" not in same


def test_the_card_as_markdown_names_versions_hashes_and_machine(tmp_path: Path) -> None:
    _log(tmp_path / "one", _run("aaaa"))
    _log(tmp_path / "two", _run("bbbb"))
    text = card_markdown(read_runs(tmp_path))
    assert "| labcoat | 0.1.0 (commit abc) |" in text
    assert "| Grader (rebench) | 0.1.0+g1 |" in text
    assert "| Hardware | CPU A, 8 cores, 32 GB memory, no GPU |" in text
    assert "| rebench | t1 | aaaa (1 run); bbbb (1 run) | 3 |" in text
    assert "**Warning** — rebench t1: runs with 2 different task contents" in text


# --- the machine's GPUs (CI has none: the fake driver of tests/fake_gpus.py) --------------

OPEN_DRIVER = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n"


def test_gpus_are_named_by_the_driver(fake_gpus: Path, tmp_path: Path, monkeypatch) -> None:
    from labcoat.families import _provenance_host as host

    (tmp_path / "version").write_text(OPEN_DRIVER)
    monkeypatch.setattr(host, "DRIVER_VERSION", tmp_path / "version")
    fields = host.gpu_fields()
    assert fields == {"gpus": 4, "gpu": "NVIDIA H100 80GB HBM3", "gpu_driver": "570.86.15"}


def test_nvidia_smi_names_gpus_the_driver_files_do_not(
    declare_gpus, tmp_path: Path, monkeypatch
) -> None:
    from labcoat.families import _provenance_host as host
    from labcoat.sandbox import _gpus

    monkeypatch.setattr(_gpus, "DRIVER_GPUS", tmp_path / "no-driver")
    monkeypatch.setattr(_gpus, "DEVICES", tmp_path)
    monkeypatch.setattr(host, "DRIVER_VERSION", tmp_path / "no-version")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "nvidia-smi").write_text("#!/bin/sh\nprintf 'NVIDIA H200, 575.51.03\\n%.0s' 1 2\n")
    (tools / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    declare_gpus(2)
    assert host.gpu_fields() == {"gpus": 2, "gpu": "NVIDIA H200", "gpu_driver": "575.51.03"}
    declare_gpus(0)
    assert host.gpu_fields() == {"gpus": 0, "gpu": None, "gpu_driver": None}

"""Provenance on every score: task content hashes, the record's columns, the results card
and the warning over a table whose runs mix task contents, graders, judges or machines."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.event import ModelEvent, SpanBeginEvent
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import GenerateConfig, ModelOutput, get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState
from scripted_models import scripted_call

from labcoat.analysis import mixed_provenance, read_runs, results_card
from labcoat.analysis._provenance import provenance_fields
from labcoat.families._provenance import (
    PROVENANCE,
    provenance_prefetch,
    provenance_record,
)
from labcoat.families._provenance_hash import clear_folder_hashes, folder_hash, top_files_hash
from labcoat.families._provenance_host import PACKAGE, cpu_model, labcoat_build
from labcoat.families._provenance_parts import used_sidecar_part
from labcoat.families._provenance_run import reported_models
from labcoat.families._score import research_score
from labcoat.report import write_report
from labcoat.report._card import card_markdown

from ._synthetic import Sample as Run
from ._synthetic import write_log

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bwrap (bubblewrap)")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _hash(root: Path) -> str:
    clear_folder_hashes()  # the cache is per process; these folders change under it
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


# --- what a real score records ------------------------------------------------------------


@scorer(metrics=[])
def _provenance_scorer() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        return research_score(1.0, 1.0)

    return score


def _answered_by(model: str, output: ModelOutput) -> ModelOutput:
    output.model = model  # what the provider reports, whatever the eval asked for
    return output


@needs_bwrap
def test_the_research_agents_budget_and_every_reported_model(tmp_path: Path) -> None:
    from labcoat.agents.research import research_agent
    from labcoat.sandbox import BwrapConfig

    outputs = [
        _answered_by("model-2025-01", scripted_call("bash", cmd="echo 1")),
        _answered_by("model-2025-02", scripted_call("bash", cmd="echo 2")),
        _answered_by("model-2025-02", scripted_call("submit", answer="done")),
    ]
    task = Task(
        dataset=[Sample(input="Count.", metadata={"time_limit_minutes": 30})],
        solver=research_agent(token_limit=100_000, message_limit=50, working_limit=900),
        scorer=_provenance_scorer(),
        sandbox=("bwrap", BwrapConfig()),
    )
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = eval(task, model=model, message_limit=40, log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    record = _record_of(log)
    # the task's 30 minutes, the agent's own limits, and the lower of its and the sample's
    assert record["limits"]["agent"] == {
        "time": 1800.0,
        "working": 900.0,
        "token": 100_000.0,
        "cost": None,
        "message": 40.0,
    }
    assert record["model"]["reported"] == "model-2025-02"  # the last output's, as before
    assert record["model"]["calls"] == {"model-2025-02": 2, "model-2025-01": 1}
    assert record["model"]["scoring_calls"] == {}
    # and the analysis has them as columns
    from labcoat.analysis import read_runs

    [row] = read_runs([str(tmp_path)]).samples.to_dict("records")
    assert row["models_reported"] == "model-2025-01 ×1; model-2025-02 ×2"
    assert row["agent_time_limit"] == 1800.0 and row["agent_working_limit"] == 900.0
    assert row["agent_token_limit"] == 100_000.0 and row["agent_message_limit"] == 40.0


def _record_of(log: EvalLog) -> dict[str, Any]:
    assert log.samples is not None
    [sample] = log.samples
    assert sample.scores is not None
    score = next(iter(sample.scores.values()))
    assert score.metadata is not None
    return score.metadata[PROVENANCE]


def test_reported_models_part_the_agents_calls_from_the_grading() -> None:
    def call(model: str) -> ModelEvent:
        output = ModelOutput.from_content("mockllm/model", "x")
        output.model = model
        return ModelEvent(
            model="mockllm/model",
            input=[],
            tools=[],
            tool_choice="none",
            config=GenerateConfig(),
            output=output,
        )

    failed = call("")
    events = [
        call("a"),
        failed,
        call("b"),
        call("a"),
        SpanBeginEvent(id="s", name="scorers"),
        call("judge"),
        call("judge"),
    ]
    assert reported_models(events) == ({"a": 2, "b": 1}, {"judge": 2})


def test_a_researchgym_sidecar_is_hashed_from_the_file_the_task_used(tmp_path: Path) -> None:
    own = _tree(tmp_path / "t", {"labcoat.yaml": "a: 1\n"})
    overlay = _tree(tmp_path / "o", {"t.yaml": "a: 2\n"})
    used = used_sidecar_part({"path": str(own / "labcoat.yaml"), "overlay": False})
    assert used is not None and used["file"] == "labcoat.yaml" and used["overlay"] is False
    other = used_sidecar_part({"path": str(overlay / "t.yaml"), "overlay": True})
    assert other is not None and other["file"] == "overlay t.yaml"
    assert other["hash"] != used["hash"]
    assert used_sidecar_part(None) is None
    gone = used_sidecar_part({"path": str(tmp_path / "gone.yaml"), "overlay": True})
    assert gone is not None and gone["hash"] is None and gone["missing"] is True


def test_a_prefetched_folder_hash_is_the_one_a_score_reads(tmp_path: Path) -> None:
    task = _tree(tmp_path / "t", {"a.py": "x = 1\n", "data/b.csv": "1,2\n"})
    clear_folder_hashes()
    provenance_prefetch({"family": "researchgym", "researchgym": {"task_dir": str(task)}})
    provenance_prefetch({"family": "researchgym"})  # no folder: nothing, and no error
    prefetched = folder_hash(str(task))  # the background thread's (waited for)
    assert prefetched.hash == _hash(task) and prefetched.files == 2  # as computed here


@needs_bwrap
def test_researchcodebench_records_its_grader_sandboxes_limits(tmp_path: Path) -> None:
    from labcoat.families.researchcodebench import researchcodebench
    from labcoat.families.researchcodebench._grading import MEMORY_MB_PER_RUN, WALL_FACTOR

    task = researchcodebench(agent="oracle", tasks="adaptive-huber", timeout=30)
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none", limit=1)
    assert log.status == "success", log.error
    record = _record_of(log)
    grader = record["limits"]["grader"]
    assert grader["cpu_seconds_per_thread"] == 30 and grader["wall_seconds"] == 30 * WALL_FACTOR
    assert grader["memory_mb"] == MEMORY_MB_PER_RUN * (grader["parallel_runs"] + 1)
    assert grader["threads_per_run"] >= 1
    assert record["limits"]["sandbox"] is None  # the sample has no sandbox of its own
    assert record["limits"]["agent"] is None  # the oracle applies no budget of its own


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


def _log(folder: Path, *samples: Run, family: str = "rebench") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_log(folder, list(samples), family=family)


def _run(task_hash: str, epoch: int = 1, **kw: Any) -> Run:
    return Run(task_id="t1", epoch=epoch, score_metadata={PROVENANCE: _provenance(task_hash, **kw)})


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
    _log(tmp_path / "a", _run("aaaa"), Run(task_id="t1", epoch=2))
    data = read_runs(tmp_path)
    assert mixed_provenance(data.runs) == []
    assert results_card(data).unrecorded == 1


def test_the_card_follows_the_leaderboard_and_warns_on_the_mixed_tables(tmp_path: Path) -> None:
    _log(tmp_path / "one", _run("aaaa"))
    _log(tmp_path / "two", _run("bbbb"))
    html = write_report([tmp_path / "one", tmp_path / "two"], tmp_path / "r.html").read_text()
    assert html.index('id="leaderboard"') < html.index('id="card"')
    board = html[html.index('id="leaderboard"') : html.index('id="card"')]
    assert "This table mixes versions" in board  # the first screen says so, card folded
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

"""Conformance with METR's task bridge (issue 23): a family's tasks are get_tasks()'s keys
(the manifest adds metadata), listing builds no image, secrets are read before discovery,
`labcoat check` names aux VMs and the kind of a family's load failure, and final scoring
that exits non-zero is a sample error carrying its exit code and output. Families are
written in tmp_path (tests/rebench/families.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import json_document, run_cli_captured
from families import copy_family, write_family
from inspect_ai import eval
from inspect_ai.log import EvalLog
from scripted import scripted

from labcoat._run._results import collect_results
from labcoat.families.rebench import _secrets, discover, rebench, task_resources
from labcoat.families.rebench._family import TaskFamilyDir
from labcoat.families.rebench._scoring import SCORING_ERROR
from labcoat.families.rebench._static import static_task_names
from labcoat.families.rebench._task import (
    FROM_CODE,
    FROM_IMAGE,
    FROM_SOURCE,
    LISTED_FROM,
)

ONLY_A = """
version: 1.0.0
tasks:
  a:
    resources: {cpus: 2, memory_gb: 1}
"""


@pytest.fixture(autouse=True)
def no_secrets_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """No secrets file read by an earlier test in this process."""
    monkeypatch.setattr(_secrets, "_files", [])
    for name in ("LABCOAT_TEST_SECRET_A", "LABCOAT_TEST_SECRET_B"):
        monkeypatch.delenv(name, raising=False)


def _own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("LABCOAT_CACHE", str(cache))
    return cache


# --- get_tasks()'s keys, read from the source when it spells them out -------------------


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ('return {"a": 1, "b": 2}', ["a", "b"]),
        ('return {w: {"w": w} for w in ("x", "y")}', ["x", "y"]),
        ('words = ["x", "y"]\n        return {w: w for w in words}', ["x", "y"]),
        ("return TASKS", ["m", "n"]),
        ("return cast(dict, TASKS)", ["m", "n"]),
        ('return {"a": 1} if os.environ.get("K") else {}', None),  # a condition
        ('return {f"t{i}": i for i in range(3)}', None),  # computed
        ('return {"a": 1, **MORE}', None),
        ('return {"a": 1, "a": 2}', None),
        ("return json.load(open('tasks.json'))", None),
        ('TASKS["late"] = 1\n        return TASKS', None),  # changed in place
    ],
)
def test_task_names_are_read_from_the_source_only_when_it_spells_them_out(
    tmp_path: Path, source: str, names: list[str] | None
) -> None:
    module = tmp_path / "fam.py"
    module.write_text(
        'TASKS = {"m": 1, "n": 2}\n\nclass TaskFamily:\n'
        f"    @staticmethod\n    def get_tasks():\n        {source}\n"
    )
    assert static_task_names(module) == names


def test_tasks_the_manifest_lacks_are_tasks_with_default_resources(tmp_path: Path) -> None:
    family = write_family(
        tmp_path,
        "fam",
        """
        class TaskFamily:
            @staticmethod
            def get_tasks():
                return {"a": {}, "b": {}, "c": {}}

        import nope  # never imported: the source says what the tasks are
        """,
        manifest_yaml=ONLY_A,
    )
    entries = discover(tmp_path)
    assert [e.id for e in entries] == ["fam/a", "fam/b", "fam/c"]
    assert {e.extra[LISTED_FROM] for e in entries} == {FROM_SOURCE}
    assert all(e.extra["version"] == "1.0.0" for e in entries)  # the manifest's metadata
    a, b = (task_resources(TaskFamilyDir(family), t) for t in ("a", "b"))
    assert (a.cpus, a.memory_mb) == (2, 1024)
    assert (b.cpus, b.memory_mb, b.gpus) == (None, 4096, 0)  # labcoat's defaults


def test_get_tasks_runs_in_the_environment_when_the_source_cannot_tell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _own_cache(monkeypatch, tmp_path)
    targets = tmp_path / "targets"
    write_family(
        targets,
        "fam",
        """
        class TaskFamily:
            @staticmethod
            def get_tasks():
                return {t: {} for t in "abc"}

            @staticmethod
            def install():
                raise RuntimeError("install() must not run to list")
        """,
        manifest_yaml=ONLY_A,
    )
    code, out, err = run_cli_captured(capsys, "list", str(targets), "--json")
    assert code == 0, err
    listed = json_document(out)
    assert [e["id"] for e in listed] == ["fam/a", "fam/b", "fam/c"]
    assert {e[LISTED_FROM] for e in listed} == {FROM_CODE}
    [line] = err.strip().splitlines()
    assert line.startswith("labcoat: running get_tasks() of 1 task family") and "fam" in line
    assert not (cache / "images").exists()  # nothing built but the environment


INSTALL_MAKES_TASKS = """
import json


class TaskFamily:
    @staticmethod
    def install():
        with open("tasks.json", "w") as f:
            json.dump(["one", "two"], f)

    @staticmethod
    def get_tasks():
        # as METR's swe_bench: get_tasks() reads what install() made
        return {name: {} for name in json.load(open("tasks.json"))}

    @staticmethod
    def score(t, submission):
        return 1.0
"""


def test_listing_builds_no_image_even_when_get_tasks_needs_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _own_cache(monkeypatch, tmp_path)
    targets = tmp_path / "targets"
    family = write_family(targets, "fam", INSTALL_MAKES_TASKS)
    code, _, err = run_cli_captured(capsys, "list", str(targets))
    assert code == 2
    [problem] = [line for line in err.splitlines() if "error" in line]
    assert "get_tasks() fails without the family's image" in problem
    assert "tasks.json" in problem and "manifest.yaml" in problem
    assert not (cache / "images").exists()
    # a manifest then lists the tasks (the family's code cannot, before install())
    (family / "manifest.yaml").write_text("tasks:\n  one: {}\n")
    code, out, err = run_cli_captured(capsys, "list", str(targets), "--json")
    assert code == 0, err
    assert [e["id"] for e in json_document(out)] == ["fam/one"]
    assert not (cache / "images").exists()
    # eval's discovery builds the image it needs anyway, and asks the family there
    (family / "manifest.yaml").unlink()
    entries = discover(targets)
    assert [(e.id, e.extra[LISTED_FROM]) for e in entries] == [
        ("fam/one", FROM_IMAGE),
        ("fam/two", FROM_IMAGE),
    ]


# --- secrets before discovery --------------------------------------------------------------


def test_list_and_eval_read_secrets_before_discovery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    targets = tmp_path / "targets"
    family = copy_family("secret_check", targets)
    (family / "manifest.yaml").unlink()  # only get_tasks() knows: it needs both secrets
    secrets = tmp_path / "secrets.env"
    secrets.write_text("LABCOAT_TEST_SECRET_A=a-value\nLABCOAT_TEST_SECRET_B=b-value\n")
    code, _, err = run_cli_captured(capsys, "list", str(targets))
    assert code == 2 and "LABCOAT_TEST_SECRET_A, LABCOAT_TEST_SECRET_B" in err
    code, out, err = run_cli_captured(
        capsys, "list", str(targets), "--json", "--secrets", str(secrets)
    )
    assert code == 0, err
    assert [e["id"] for e in json_document(out)] == ["secret_check/capital"]
    code, out, err = run_cli_captured(
        capsys,
        "eval",
        str(targets),
        "--agent",
        "noop",
        "--json",
        "--no-inspect",
        "--secrets",
        str(secrets),
        "--log-dir",
        str(tmp_path / "logs"),
    )
    [result] = json_document(out)
    assert (result["task"], result["errors"], result["raw"]) == ("secret_check/capital", 0, 0.0)


# --- labcoat check: aux VMs, and the kind of a family's load failure ------------------------


def _check_lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    code, out, err = run_cli_captured(capsys, "check", *args)
    assert code == 2 and "Traceback" not in out + err, out + err
    return out.strip().splitlines()


def test_check_names_a_task_that_asks_for_an_aux_vm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_family("machine_check", tmp_path)
    lines = _check_lines(capsys, str(tmp_path), "--no-build")
    aux = [line for line in lines if ": aux_vm: " in line]
    assert aux == [
        "machine_check/aux (rebench): aux_vm: asks for an aux VM (get_aux_vm_spec); "
        "labcoat makes no VMs"
    ]


def test_check_gives_a_broken_family_s_problem_its_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _own_cache(monkeypatch, tmp_path)
    targets = tmp_path / "targets"
    secret = copy_family("secret_check", targets)
    (secret / "manifest.yaml").unlink()
    write_family(
        targets,
        "unbuildable",
        INSTALL_MAKES_TASKS,
        build_steps_json='[{"type": "shell", "commands": ["echo failing step >&2", "exit 7"]}]',
    )
    pointer = write_family(
        targets, "pointer", 'class TaskFamily:\n    get_tasks = staticmethod(lambda: {"t": {}})\n'
    )
    (pointer / "manifest.yaml").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 120\n"
    )
    lines = _check_lines(capsys, str(targets))
    kinds = {line.split(" (rebench): ")[0]: line.split(": ")[1] for line in lines}
    assert kinds == {"secret_check": "secrets", "unbuildable": "build", "pointer": "lfs"}, lines
    [build] = [line for line in lines if line.startswith("unbuildable")]
    assert "build_steps.json[0]" in build and "\n" not in build
    [lfs] = [line for line in lines if line.startswith("pointer")]
    assert "manifest.yaml" in lfs and "git lfs pull" in lfs
    # without builds the family whose tasks need its image says so, as `load`
    lines = _check_lines(capsys, str(targets), "--no-build")
    [unbuilt] = [line for line in lines if line.startswith("unbuildable")]
    assert unbuilt.startswith("unbuildable (rebench): load: ") and "image" in unbuilt


# --- final scoring that exits non-zero is an error --------------------------------------------

SCORE_EXITS = """
import sys


class TaskFamily:
    @staticmethod
    def get_tasks():
        return {
            "fine": {"out": "Hi there!", "err": "Oh no!", "code": 0},
            "exits": {"out": "Hi there!", "err": "Oh no!", "code": 4},
            "quiet": {"out": "only stdout", "err": "", "code": 2},
            "raises": {"out": "", "err": "", "code": None},
        }

    @staticmethod
    def score(t, submission):
        print(t["out"])
        if t["err"]:
            print(t["err"], file=sys.stderr)
        if t["code"] is None:
            raise ValueError("the submission broke the scorer")
        if t["code"]:
            sys.exit(t["code"])
        return float(submission)
"""

FINAL_INTERMEDIATE_EXITS = """
import os
import sys


class TaskFamily:
    @staticmethod
    def get_tasks():
        return {"main": {}}

    @staticmethod
    def intermediate_score(t):
        if os.path.exists("/home/agent/fail.txt"):
            print("cannot score", file=sys.stderr)
            sys.exit(5)
        return {"score": 0.5, "message": {"ok": True}}
"""


def _eval(target: Path, tasks: list[str], solver: Any, tmp_path: Path) -> EvalLog:
    [log] = eval(
        rebench(target=str(target), tasks=tasks, agent="noop"),
        solver=solver,
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    return log


def test_final_score_that_exits_non_zero_is_a_sample_error(tmp_path: Path) -> None:
    targets = tmp_path / "targets"
    write_family(targets, "exits", SCORE_EXITS)
    write_family(targets, "late", FINAL_INTERMEDIATE_EXITS)
    tasks = ["exits/fine", "exits/exits", "exits/quiet", "exits/raises", "late/main"]
    steps = [
        {"main": ("score",)},
        {"main": ("bash", "touch fail.txt")},
        {"main": ("score",)},
        ("submit", "1"),
    ]
    log = _eval(targets, tasks, scripted(*steps), tmp_path)
    samples = {s.id: s for s in log.samples or []}
    fine = samples["exits/fine"]
    assert fine.error is None and fine.scores["rebench_scorer"].value["raw"] == 1.0
    # the error's one line: the exit code, then what stdout and stderr end with (as in
    # METR's bridge, whose tests look for all three)
    for task, code, ending in (
        ("exits/exits", 4, "; stdout: Hi there!; stderr: Oh no!"),
        ("exits/quiet", 2, "; stdout: only stdout; stderr: (empty)"),
        ("exits/raises", 1, "; stdout: (empty); stderr: Traceback"),
        ("late/main", 5, "; stdout: (empty); stderr: cannot score"),
    ):
        sample = samples[task]
        assert sample.error is not None, task
        message = sample.error.message
        assert "\n" not in message and f"exited with code {code}{ending}" in message, message
        assert not sample.scores  # no floor score, no flag: an error
        kept = sample.store[SCORING_ERROR]
        assert kept["exit_code"] == code
        infos = [e.data for e in sample.events if e.event == "info" and isinstance(e.data, dict)]
        # the transcript has it too (long text there is an attachment of the log)
        [event] = [d["final_scoring_failed"] for d in infos if "final_scoring_failed" in d]
        assert (event["function"], event["exit_code"]) == (kept["function"], code)
    raised = samples["exits/raises"].error
    assert raised is not None and "⏎ ValueError: the submission broke the scorer" in raised.message
    kept = samples["exits/exits"].store[SCORING_ERROR]
    assert (kept["function"], kept["stdout"].strip(), kept["stderr"].strip()) == (
        "score",
        "Hi there!",
        "Oh no!",
    )
    assert "Traceback" in samples["exits/raises"].store[SCORING_ERROR]["stderr"]
    # the agent's own call to the score tool while scoring broke keeps its behaviour
    tool = [json.loads(o) for o in samples["late/main"].store["test:outputs"] if o.startswith("{")]
    assert tool[-1]["message"]["error"].startswith("scoring failed")
    results = {r.task_id: r for r in collect_results([log])}
    assert results["exits/exits"].errors == 1 and results["exits/fine"].errors == 0

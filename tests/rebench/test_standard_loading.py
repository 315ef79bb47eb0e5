"""Loading METR task families as the task standard defines them: discovery with or without
manifest.yaml and labcoat.yaml, broken families reported while the others load, the
manifest's resources, build_steps.json checked, required secrets found before anything
runs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured
from families import copy_family

from labcoat._errors import TaskDataError
from labcoat._util.sync import run_sync
from labcoat.families.rebench import (
    TaskFamilyDir,
    discover,
    family_setup,
    task_resources,
)
from labcoat.families.rebench._build import defines_install, load_build_steps
from labcoat.families.rebench._secrets import declared_secrets
from labcoat.sandbox import DEFAULT_DISK_MB


def _ids(root: Path) -> dict[str, str | None]:
    return {e.id: e.problem for e in discover(root)}


def test_tasks_are_listed_from_the_manifest_without_running_code(tmp_path: Path) -> None:
    family = copy_family("odd_count", tmp_path)
    # code that cannot even be imported: listing must not need it
    (family / "odd_count.py").write_text((family / "odd_count.py").read_text() + "\nimport nope\n")
    entries = discover(tmp_path)
    assert [e.id for e in entries] == ["odd_count/main", "odd_count/hard", "odd_count/manual"]
    assert entries[0].extra["version"] == "1.2.0"
    assert entries[0].extra["normalized"] is False  # no labcoat.yaml: raw scores


def test_without_manifest_the_family_code_lists_its_tasks(tmp_path: Path) -> None:
    family = copy_family("odd_count", tmp_path)
    (family / "manifest.yaml").unlink()
    assert list(_ids(tmp_path)) == ["odd_count/main", "odd_count/hard", "odd_count/manual"]


def test_get_instructions_is_optional(tmp_path: Path) -> None:
    family = copy_family("machine_check", tmp_path)
    setup = run_sync(family_setup, TaskFamilyDir(family))
    assert setup["tasks"]["small"]["instructions"] == ""
    assert setup["tasks"]["aux"]["aux_vm"] is True and setup["tasks"]["small"]["aux_vm"] is False


def test_a_broken_family_is_one_entry_and_the_others_still_load(tmp_path: Path, capsys) -> None:
    copy_family("odd_count", tmp_path)
    bad_manifest = copy_family("odd_count", tmp_path, as_name="bad_manifest")
    (bad_manifest / "manifest.yaml").write_text("tasks:\n  main:\n    resources: {cpus: lots}\n")
    bad_steps = copy_family("odd_count", tmp_path, as_name="bad_steps")
    (bad_steps / "build_steps.json").write_text(json.dumps([{"type": "file", "source": "nope"}]))
    no_family = copy_family("odd_count", tmp_path, as_name="no_family")
    (no_family / "manifest.yaml").unlink()
    (no_family / "no_family.py").write_text("import does_not_exist\nclass TaskFamily: pass\n")

    problems = _ids(tmp_path)
    assert problems["odd_count/main"] is None
    assert "manifest.yaml: tasks.main.resources.cpus" in problems["bad_manifest"]
    assert "build_steps.json: [0].destination: Field required" in problems["bad_steps"]
    assert "does_not_exist" in problems["no_family"]
    # its get_tasks() ran once (one line said so); listing again reuses what it said
    assert "running get_tasks() of 1 task family" in capsys.readouterr().err
    # list names the broken ones (one line each), lists the rest, exits 2
    code, out, err = run_cli_captured(capsys, "list", str(tmp_path), "--json")
    assert code == 2
    assert {e["id"] for e in json.loads(out) if not e["problem"]} == {
        "odd_count/main",
        "odd_count/hard",
        "odd_count/manual",
    }
    assert len(err.strip().splitlines()) == 3 and "Traceback" not in err


@pytest.mark.parametrize(
    ("steps", "field", "message"),
    [
        ([{"type": "file", "source": "../x", "destination": "y"}], "[0].source", "outside"),
        ([{"type": "file", "source": "missing.txt", "destination": "y"}], "[0].source", "exist"),
        ([{"type": "shell", "commands": []}], "[0].commands", "at least 1"),
        ([{"type": "docker", "commands": ["x"]}], "[0]", "type"),
        ({"type": "shell"}, None, "list"),
    ],
)
def test_build_steps_are_checked(tmp_path: Path, steps, field, message) -> None:
    family = copy_family("odd_count", tmp_path)
    (family / "build_steps.json").write_text(json.dumps(steps))
    with pytest.raises(TaskDataError) as error:
        load_build_steps(family)
    assert error.value.file.endswith("build_steps.json")
    assert error.value.field == field or (field and (error.value.field or "").startswith(field))
    assert message in error.value.message


def test_install_and_secrets_are_read_from_the_source(tmp_path: Path) -> None:
    machine = copy_family("machine_check", tmp_path)
    assert defines_install(machine / "machine_check.py")
    assert not defines_install(copy_family("odd_count", tmp_path) / "odd_count.py")
    secret = copy_family("secret_check", tmp_path)
    assert declared_secrets(secret / "secret_check.py") == [
        "LABCOAT_TEST_SECRET_A",
        "LABCOAT_TEST_SECRET_B",
    ]


def test_manifest_resources_with_sidecar_overrides(tmp_path: Path) -> None:
    family = copy_family("machine_check", tmp_path)
    small = task_resources(TaskFamilyDir(family), "small")
    assert (small.memory_mb, small.cpus, small.gpus, small.disk_mb) == (1024, 1, 0, 2048)
    gpu = task_resources(TaskFamilyDir(family), "gpu")
    assert (gpu.memory_mb, gpu.cpus, gpu.gpus, gpu.gpu_model) == (4096, None, 1, "h100")
    assert gpu.disk_mb == DEFAULT_DISK_MB
    # labcoat.yaml may override a figure; what it leaves out comes from the manifest
    (family / "labcoat.yaml").write_text(
        "tasks:\n  small:\n    title: small\n"
        "    score: {start: 0, reference: 1, higher_is_better: true}\n"
        "    resources: {memory_gb: 2, disk_gb: 3}\n"
    )
    small = task_resources(TaskFamilyDir(family), "small")
    assert (small.memory_mb, small.cpus, small.disk_mb) == (2048, 1, 3072)


def test_missing_secrets_fail_before_the_run_naming_them(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("LABCOAT_TEST_SECRET_A", raising=False)
    monkeypatch.delenv("LABCOAT_TEST_SECRET_B", raising=False)
    copy_family("secret_check", tmp_path)
    # the manifest lists the task: it is there, and the run refuses to start without secrets
    assert list(_ids(tmp_path)) == ["secret_check/capital"]
    code, _, err = run_cli_captured(capsys, "eval", str(tmp_path), "--agent", "noop")
    assert code == 2
    assert "LABCOAT_TEST_SECRET_A, LABCOAT_TEST_SECRET_B" in err and "--secrets" in err
    assert "Traceback" not in err
    # labcoat check says so too
    code, out, _ = run_cli_captured(capsys, "check", str(tmp_path), "--no-build")
    assert code == 2
    assert "secret_check/capital (rebench): secrets:" in out and "LABCOAT_TEST_SECRET_B" in out
    # with a secrets file naming one and the environment the other, nothing is missing
    env = tmp_path / "secrets.env"
    env.write_text("# test secrets\nLABCOAT_TEST_SECRET_A='from the file'\n")
    monkeypatch.setenv("LABCOAT_TEST_SECRET_B", "from the environment")
    code, out, _ = run_cli_captured(
        capsys, "check", str(tmp_path), "--no-build", "--secrets", str(env)
    )
    assert code == 0, out


def test_an_unreachable_requirement_is_the_family_s_one_line_reason(tmp_path: Path, capsys) -> None:
    copy_family("odd_count", tmp_path)
    broken = copy_family("odd_count", tmp_path, as_name="needs_git")
    (broken / "requirements.txt").write_text(
        "--no-index\ngit+file:///nonexistent/repository.git#egg=somepkg\n"
    )
    code, out, _ = run_cli_captured(
        capsys,
        "eval",
        str(tmp_path),
        "--agent",
        "noop",
        "--json",
        "--log-dir",
        str(tmp_path / "logs"),
    )
    assert code == 0  # what cannot run here is listed, not failed
    results = {r["task"]: r for r in json_document(out)}
    assert results["odd_count/main"]["errors"] == 0 and results["odd_count/main"]["raw"] == 0.0
    reason = results["needs_git/main"]["unavailable"]
    assert reason is not None and "\n" not in reason
    assert "nonexistent" in reason or "git" in reason
    shutil.rmtree(tmp_path / "logs")


def test_check_builds_the_family_image_and_names_a_failing_step(tmp_path: Path, capsys) -> None:
    family = copy_family("odd_count", tmp_path)
    (family / "build_steps.json").write_text(
        json.dumps([{"type": "shell", "commands": ["echo preparing", "apt-get install -y foo"]}])
    )
    code, out, _ = run_cli_captured(capsys, "check", str(tmp_path), "--task", "odd_count/main")
    assert code == 2
    [line] = out.strip().splitlines()
    # apt needs a Debian root file system: only root with mmdebstrap can build one, and
    # elsewhere check says which of the two is missing
    if os.geteuid() != 0:
        assert line.startswith("odd_count/main (rebench): build: building a Debian root file")
        assert "needs root" in line
        return
    if shutil.which("mmdebstrap") is None:
        assert line == (
            "odd_count/main (rebench): build: mmdebstrap is not installed: "
            "install it with `apt-get install mmdebstrap`"
        )
        return
    assert line.startswith(
        "odd_count/main (rebench): build: odd_count: build_steps.json[0] (shell)"
    )

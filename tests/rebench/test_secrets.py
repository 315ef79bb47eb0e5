"""Where a secrets file reaches: the task that named it and its samples, not the rest of
the process; a regrade reads the file the runs named, or one of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import run_cli_captured
from families import copy_family

from labcoat._errors import LabcoatError
from labcoat.families.rebench import MissingSecretsError, rebench
from labcoat.families.rebench._sample import SampleTask
from labcoat.families.rebench._secrets import secret_values

NAMES = ["LABCOAT_TEST_SECRET_A", "LABCOAT_TEST_SECRET_B"]


@pytest.fixture(autouse=True)
def no_secrets_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)


def test_a_task_s_secrets_file_is_its_samples_alone(tmp_path: Path) -> None:
    targets = tmp_path / "targets"
    copy_family("secret_check", targets)
    (targets / "secret_check" / "manifest.yaml").unlink()  # only get_tasks() lists it
    env = tmp_path / "secrets.env"
    env.write_text("LABCOAT_TEST_SECRET_A=a-value\nLABCOAT_TEST_SECRET_B=b-value\n")
    # the file is read while the task lists and builds its samples (get_tasks() needs it)
    task = rebench(str(targets), agent="noop", secrets=str(env))
    [sample] = task.dataset
    assert sample.id == "secret_check/capital"
    # and by its samples when they run, after the call
    expected = {"LABCOAT_TEST_SECRET_A": "a-value", "LABCOAT_TEST_SECRET_B": "b-value"}
    assert SampleTask.of(sample.metadata).secret_values() == expected
    # nothing else in this process reads it: another task without it is refused
    assert secret_values(NAMES) == ({}, NAMES)
    with pytest.raises(LabcoatError, match="not set: LABCOAT_TEST_SECRET_A"):
        rebench(str(targets), agent="noop")
    # a file removed since adds nothing: its names are missing, by name
    env.unlink()
    with pytest.raises(MissingSecretsError, match="LABCOAT_TEST_SECRET_B"):
        SampleTask.of(sample.metadata).secret_values()


def _regrade(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, dict]]:
    code, out, err = run_cli_captured(capsys, "regrade", *args, "--json")
    assert "Traceback" not in err, err
    return code, {row["task"]: row for row in json.loads(out)["samples"]}


def test_regrade_reads_the_runs_secrets_file_or_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    targets = tmp_path / "targets"
    copy_family("secret_check", targets)
    copy_family("odd_count", targets)
    env = tmp_path / "secrets.env"
    env.write_text("LABCOAT_TEST_SECRET_A=a-value\nLABCOAT_TEST_SECRET_B=b-value\n")
    logs = tmp_path / "logs"
    runs = {"secret": ["secret_check/capital", "--secrets", str(env)], "odd": ["odd_count/main"]}
    for name, (task, *more) in runs.items():
        code, _, err = run_cli_captured(
            capsys, "eval", str(targets), "--task", task, *more, "--agent", "noop",
            "--no-inspect", "--log-dir", str(logs / name),
        )  # fmt: skip
        assert code == 0, err
    # the runs' file, read again
    code, rows = _regrade(capsys, str(logs))
    assert code == 0 and [r["error"] for r in rows.values()] == [None, None], rows
    # gone (another machine): that log's sample says why, the other log is regraded
    moved = shutil.move(env, tmp_path / "here.env")
    code, rows = _regrade(capsys, str(logs))
    assert code == 1
    assert f"--secrets {env}: no such file" in rows["secret_check/capital"]["error"]
    assert rows["odd_count/main"]["error"] is None and rows["odd_count/main"]["new"] is not None
    # this machine's file instead
    code, rows = _regrade(capsys, str(logs), "--secrets", str(moved))
    assert code == 0 and [r["error"] for r in rows.values()] == [None, None], rows

"""Keeping a workspace never fails a score: the failure is said in its metadata."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai.model import ModelName
from inspect_ai.solver import TaskState

import labcoat.grading._keep as keep


def state() -> TaskState:
    return TaskState(ModelName("none/none"), "sample", 1, "", [])


async def test_a_failure_to_keep_is_recorded_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setattr(keep, "store_root", lambda: blocker / "workspaces")
    result = await keep.keep_workspace(state(), None)
    assert set(result) == {"error"} and "not-a-folder" in result["error"]


async def test_without_a_log_the_default_folder_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))
    result = await keep.keep_workspace(state(), None, submission=True)
    assert (tmp_path / "logs" / result["manifest"]).is_file()
    assert result["submission"] == ""


async def test_keeping_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABCOAT_KEEP_WORKSPACES", "0")
    assert "LABCOAT_KEEP_WORKSPACES=0" in (await keep.keep_workspace(state(), None))["error"]

"""`keep_workspace` in each family's sidecar: read where the family reads its settings."""

from __future__ import annotations

import pydantic
import pytest

from labcoat.families._sidecar_parts import KeepWorkspace
from labcoat.families.paperbench._settings import PaperSettings
from labcoat.families.rebench._sidecar import TaskSpec
from labcoat.families.researchgym._sidecar import Sidecar as GymSidecar


def test_each_family_reads_keep_workspace() -> None:
    spec = {"exclude": ["checkpoints", "data/*.bin"]}
    assert PaperSettings.model_validate({"keep_workspace": spec}).keep_workspace.exclude == (
        "checkpoints",
        "data/*.bin",
    )
    rebench = {"title": "t", "score": {"start": 0, "reference": 1, "higher_is_better": True}}
    assert TaskSpec.model_validate({**rebench, "keep_workspace": spec}).keep_workspace == (
        KeepWorkspace(exclude=("checkpoints", "data/*.bin"))
    )
    assert "keep_workspace" in GymSidecar.model_fields


def test_an_unknown_key_is_an_error() -> None:
    with pytest.raises(pydantic.ValidationError, match="excludes"):
        KeepWorkspace.model_validate({"excludes": ["x"]})

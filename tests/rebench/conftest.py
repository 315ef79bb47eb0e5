"""Shared fixtures of the RE-Bench tests: METR-shaped families in one target folder, and
one cache of environments and images for the whole session (built once, thrown away)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from families import FAMILIES, copy_family


@pytest.fixture(scope="session")
def metr_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding every test family of tests/rebench/data/families (with wheels)."""
    root = tmp_path_factory.mktemp("metr-families")
    for family in sorted(p.name for p in FAMILIES.iterdir() if p.is_dir()):
        copy_family(family, root)
    return root


@pytest.fixture(scope="module", autouse=True)
def rebench_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Environments and images of these tests live in the session's temporary folder."""
    cache = tmp_path_factory.getbasetemp() / "rebench-cache"
    before = os.environ.get("LABCOAT_CACHE")
    os.environ["LABCOAT_CACHE"] = str(cache)
    try:
        yield cache
    finally:
        if before is None:
            os.environ.pop("LABCOAT_CACHE", None)
        else:
            os.environ["LABCOAT_CACHE"] = before


@pytest.fixture(autouse=True)
def no_secrets_files_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secrets file one test named (`--secrets`, kept for the whole process as a CLI run
    is) is not there for the next."""
    from labcoat.families.rebench import _secrets

    monkeypatch.setattr(_secrets, "_files", [])

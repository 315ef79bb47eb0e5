"""The test helper that stretches fixed time limits on a loaded machine."""

from __future__ import annotations

import os

import pytest
from machine_load import MAX_SCALE, SCALE_ENV, load_scale, scaled


def test_an_idle_machine_keeps_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCALE_ENV, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert load_scale() == 1.0 and scaled(20) == 20


def test_a_loaded_machine_stretches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCALE_ENV, raising=False)
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0 * cpus, 0.0, 0.0))
    assert scaled(20) == 60
    monkeypatch.setattr(os, "getloadavg", lambda: (100.0 * cpus, 0.0, 0.0))
    assert load_scale() == MAX_SCALE


def test_the_environment_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCALE_ENV, "2.5")
    assert scaled(20) == 50

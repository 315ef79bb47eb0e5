"""ts-attribution's model check decides on each problem's decoy, not on their mean.

On the mean over the three problems, an explainer that told one decoy of three apart
(honest there, a window detector on the rest) passed: CI saw the behaviour attack of
`test_cheats_round4.py` score 1.089 unflagged when one decoy classified the development
series worse than the others. These tests play the rule itself on maps built here, so
each case is decided, not drawn: the cheat passes the mean and fails the rule, and the
controls show what passes and what does not.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import numpy as np
import pytest

from labcoat.suites import SUITES_DIR

GRADING = SUITES_DIR / "mini" / "researchgym" / "ts-attribution" / "grading"
SERIES, LENGTH, WIDTH = 200, 64, 5


@pytest.fixture(scope="module")
def grader() -> ModuleType:
    """The bundled grade.py, loaded under its own name; the modules it imports (its
    agent_code, make_data, tsx) leave sys.modules again, as class-incremental's grader has
    modules of the same names."""
    before, path = set(sys.modules), list(sys.path)
    sys.path[:0] = [str(GRADING), str(GRADING.parent)]
    try:
        spec = importlib.util.spec_from_file_location("ts_attribution_grade", GRADING / "grade.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
        sys.path[:] = path
    return module


def _steps(rng: np.random.Generator) -> np.ndarray:
    steps = np.zeros((SERIES, LENGTH), dtype=bool)
    for row, start in enumerate(rng.integers(0, LENGTH - WIDTH, SERIES)):
        steps[row, start : start + WIDTH] = True
    return steps


def _finds(steps: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Maps that point at the template's steps (what an honest map of a decoy does)."""
    return steps + 0.1 * rng.random(steps.shape)


def _misses(steps: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Maps that know nothing of the template (a window detector's, on the probes)."""
    return rng.random(steps.shape)


def _check(grader: ModuleType, honest_on: set[str], contrast_finds: bool = False) -> tuple:
    """The model check of maps honest on the decoys of `honest_on` and blind elsewhere; the
    graded classifiers' maps of the probes find the template only if `contrast_finds`."""
    rng = np.random.default_rng(7)
    maps, probes = {}, {}
    for kind in grader.KINDS:
        steps = _steps(rng)
        probes[kind] = (None, None, steps, {})
        maps["probe", kind] = (_finds if kind in honest_on else _misses)(steps, rng)
        maps["contrast", kind] = (_finds if contrast_finds else _misses)(steps, rng)
    details: dict = {}
    check = grader.model_check(maps, probes, details, order=[])
    return check, details["model_check"]


def test_one_decoy_told_apart_passes_the_mean_and_fails_the_rule(grader: ModuleType) -> None:
    check, details = _check(grader, honest_on={"bump"})
    # the mean over problems, the rule before: this explainer passed it
    assert details["decoy_auprc"] >= grader.MODEL_CHECK_MIN, details
    failure = grader.check_failure(check)
    assert failure is not None and "decoy classifier is" in failure, failure
    assert "needed for each problem" in failure
    assert details["lowest"]["problem"] != "bump"


def test_two_decoys_of_three_are_not_enough(grader: ModuleType) -> None:
    check, _ = _check(grader, honest_on={"bump", "shift"})
    failure = grader.check_failure(check)
    assert failure is not None and "burst decoy classifier" in failure, failure


def test_maps_that_follow_every_decoy_pass(grader: ModuleType) -> None:
    """The control: honest on every decoy, blind to the template where the classifier
    ignores it."""
    check, details = _check(grader, honest_on=set(grader.KINDS))
    assert grader.check_failure(check) is None, details


def test_maps_of_the_series_alone_fail_on_the_contrast(grader: ModuleType) -> None:
    """The second condition still holds on its own: maps that find the template whatever
    the model (the series alone) pass the first and fail the contrast."""
    check, _ = _check(grader, honest_on=set(grader.KINDS), contrast_finds=True)
    failure = grader.check_failure(check)
    assert failure is not None and "no better for the decoy" in failure, failure

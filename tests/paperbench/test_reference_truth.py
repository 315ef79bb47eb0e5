"""The check judge's expected values are the reference's (`_reference.py`): a submission's
code cannot answer a check from what the check computes, draws or reads, because none of it
is in any process the submission's code runs in.

These run the judge on the bundled tail-averaged-sgd paper with a host runner (no sandbox:
what is tested is what reaches the process that runs submission code, and the decision);
`test_integrity.py` runs the same attacks through the real task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from labcoat.families.paperbench import (
    CheckJudge,
    CommandRequest,
    CommandResult,
    JudgeInput,
    LocalFiles,
    Reproduction,
    Rerun,
    host_command_runner,
    load_paper,
    load_sidecar,
    parse_sidecar,
)
from labcoat.families.paperbench._reference import Tolerance, compare_results
from labcoat.families.paperbench._sidecar import PythonCheck, RecomputeCheck
from labcoat.suites import resolve_target

from ._helpers import HOST_ENV

pytestmark = pytest.mark.anyio

PAPER = load_paper(resolve_target("mini") / "paperbench" / "papers" / "tail-averaged-sgd")
SIDECAR = load_sidecar(PAPER.sidecar_path, PAPER.rubric)
ENV = {**HOST_ENV, "OPENBLAS_NUM_THREADS": "1"}

# run_sgd that answers the inputs the python checks used to fix (default_rng(3), (4), (5)):
# it keeps the honest answers for those and is wrong everywhere else
KNOWS_THE_OLD_INPUTS = """
import numpy as np
_right = run_sgd
_known = {}
for _seed in (3, 4, 5):
    _known[float(np.random.default_rng(_seed).normal())] = _seed
def run_sgd(X, y, lr, tail_fraction=0.5):
    out = _right(X, y, lr, tail_fraction)
    if float(np.asarray(X)[0, 0]) in _known:
        return out
    return {"last": out["last"], "uniform": out["last"], "tail": out["last"]}
"""
# run_sgd that returns the expected value the check computed before calling it, if any
READS_THE_CALLERS_FRAME = """
import sys
_right = run_sgd
def run_sgd(X, y, lr, tail_fraction=0.5):
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("want", "expected", "result"):
            if isinstance(frame.f_locals.get(name), dict):
                return frame.f_locals[name]
        frame = frame.f_back
    out = _right(X, y, lr, tail_fraction)
    return {"last": out["last"], "uniform": out["last"], "tail": out["last"]}
"""


def averaging_leaves() -> list[str]:
    return ["cd-uniform-average", "cd-tail-average"]


def with_sgd(tmp_path: Path, extra: str) -> Path:
    reference = PAPER.reference_submission
    assert reference is not None
    root = tmp_path / "submission"
    shutil.copytree(reference, root)
    (root / "tailavg" / "sgd.py").write_text((root / "tailavg" / "sgd.py").read_text() + extra)
    return root


async def grade_code(root: Path, runner=None) -> dict[str, tuple[float, str]]:
    judge = CheckJudge(runner=runner or host_command_runner({"submission": root}, env=ENV))
    result = await judge.judge(JudgeInput(PAPER, PAPER.rubric, LocalFiles(root), code_dev=True))
    return {n.id: (n.score, n.explanation) for _, n in result.tree.leaves() if n.id}


@pytest.mark.parametrize("attack", ["knows-the-old-inputs", "reads-the-callers-frame"])
async def test_code_checks_cannot_be_answered_from_the_check(attack: str, tmp_path: Path) -> None:
    """Fixed inputs (the old checks' default_rng(4)) and an expected value in the check's
    own frame were answers a package could give without the method: now the inputs are
    drawn at grading time and the expected value is never in the submission's process."""
    extra = KNOWS_THE_OLD_INPUTS if attack == "knows-the-old-inputs" else READS_THE_CALLERS_FRAME
    grades = await grade_code(with_sgd(tmp_path, extra))
    for leaf in averaging_leaves():
        score, why = grades[leaf]
        assert score == 0.0, (leaf, why)
        assert "the reference gives" in why, why
    # control: the same package without the trick (the reference's) passes them
    honest = await grade_code(with_sgd(tmp_path / "honest", ""))
    assert all(honest[leaf][0] == 1.0 for leaf in averaging_leaves()), honest


async def test_the_recompute_runs_no_submission_code_and_shows_it_no_seed(tmp_path: Path) -> None:
    """Every command the judge sends to the submission's side is recorded: none carries the
    check seed (or the drawn list), and the recompute sends none at all; the reference's
    recompute still establishes an honest run's values."""
    reference = PAPER.reference_submission
    assert reference is not None
    import subprocess
    import time

    runs = {}
    for name, env in (("executed", {}), ("rerun", dict(SIDECAR.rerun.env))):  # type: ignore[union-attr]
        root = tmp_path / name
        shutil.copytree(reference, root)
        started = time.time()
        subprocess.run(["bash", "reproduce.sh"], cwd=root, env={**ENV, **env}, check=True)
        runs[name] = (root, started, env)
    sent: list[CommandRequest] = []
    inner = host_command_runner(
        {
            "submission": runs["executed"][0],
            "executed": runs["executed"][0],
            "rerun": runs["rerun"][0],
        },
        env=ENV,
    )

    async def spy(request: CommandRequest) -> CommandResult:
        sent.append(request)
        return await inner(request)

    seed = 987_654_321_012_345
    root, started, _ = runs["executed"]
    rerun_root, rerun_started, rerun_env = runs["rerun"]
    result = await CheckJudge(runner=spy).judge(
        JudgeInput(
            PAPER,
            PAPER.rubric,
            LocalFiles(root),
            LocalFiles(root),
            Reproduction(0, started_at=started),
            rerun=Rerun(
                LocalFiles(rerun_root), Reproduction(0, started_at=rerun_started), rerun_env, seed
            ),
        )
    )
    assert result.flags == ()
    assert result.score == 1.0, [
        (n.id, n.explanation) for _, n in result.tree.leaves() if n.score < 1
    ]
    assert sent, "the code checks ran on the submission's side"
    assert all(r.where == "submission" for r in sent)  # nothing ran in the reproductions' copies
    assert not any(str(seed) in r.command for r in sent)


def test_compare_results_refuses_what_is_not_the_reference() -> None:
    tol = Tolerance(1e-9, 1e-12)
    assert compare_results({"a": [1.0, 2.0]}, {"a": [1.0, 2.0]}, tol) is None
    assert "keys" in compare_results({"b": [1.0, 2.0]}, {"a": [1.0, 2.0]}, tol)
    assert "shape" in compare_results({"a": [1.0]}, {"a": [1.0, 2.0]}, tol)
    assert "the reference gives 2" in compare_results({"a": [1.0, 2.1]}, {"a": [1.0, 2.0]}, tol)
    assert compare_results([{"x": float("nan")}], [{"x": float("nan")}], tol) is not None


def test_the_sidecar_format_of_compare_and_recompute() -> None:
    sidecar = parse_sidecar(
        {
            "checks": [
                {
                    "leaf": "cd-eigenvalues",
                    "kind": "python",
                    "compare": {"rtol": 1e-6},
                    "code": "result = 1",
                }
            ],
            "rerun": {
                "env": {"SEED_OFFSET": "1"},
                "must_change": [{"file": "r.json", "key": "a"}],
                "recompute": [{"code": "result = {}", "files": ["r.json"], "rel_tolerance": 0.01}],
            },
        },
        PAPER.rubric,
    )
    [[check]] = list(sidecar.checks.values())
    assert isinstance(check, PythonCheck) and check.compare == Tolerance(1e-6, Tolerance().atol)
    assert sidecar.rerun is not None
    [recompute] = sidecar.rerun.recompute
    assert isinstance(recompute, RecomputeCheck)
    assert recompute.files == ("r.json",) and recompute.rel_tolerance == 0.01
    with pytest.raises(Exception, match="files"):
        parse_sidecar(
            {
                "rerun": {
                    "env": {"S": "1"},
                    "must_change": [{"file": "r.json", "key": "a"}],
                    "recompute": [{"code": "result = {}"}],
                }
            },
            PAPER.rubric,
        )

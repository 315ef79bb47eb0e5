"""The bundled mini papers: format, full check coverage, oracle >= 0.9 and noop <= 0.1.

The reference submissions are reproduced with a plain subprocess on this machine (they are
labcoat's own code); the harness runs agents' submissions in the sandbox instead.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from labcoat.families import discover as discover_all
from labcoat.families.paperbench import (
    CODE_DEVELOPMENT,
    RESULT_ANALYSIS,
    TASK_CATEGORIES,
    CheckJudge,
    JudgeInput,
    JudgeResult,
    LeafGrade,
    LocalFiles,
    Paper,
    Reproduction,
    Rerun,
    code_only,
    discover,
    grade_tree,
    host_command_runner,
    load_paper,
    load_sidecar,
    rubric_stats,
)
from labcoat.families.paperbench._sidecar import (
    CommandCheck,
    JsonCompareCheck,
    JsonValueCheck,
    PythonCheck,
)
from labcoat.suites import resolve_target

from ._helpers import HOST_ENV

pytestmark = pytest.mark.anyio

MINI = resolve_target("mini") / "paperbench"
PAPER_IDS = ["spectral-shrinkage", "tail-averaged-sgd"]
ORACLE_MIN, NOOP_MAX = 0.9, 0.1
# `python3` must be an interpreter with numpy: the one running the tests.
ENV = {
    **HOST_ENV,
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
}


def paper(paper_id: str) -> Paper:
    return load_paper(MINI / "papers" / paper_id)


# --- format ----------------------------------------------------------------------------------


def test_the_mini_suite_lists_its_papers() -> None:
    entries = discover(MINI)
    assert [e.id for e in entries] == PAPER_IDS
    for e in entries:
        assert e.extra["has_sidecar"] and e.extra["has_reference_submission"]
    # through the registry, as `labcoat list mini` will find them
    found = discover_all(resolve_target("mini"), families=["paperbench"])
    assert sorted(e.id for e in found) == PAPER_IDS


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_paper_folder_is_complete(paper_id: str) -> None:
    p = paper(paper_id)
    assert p.id == paper_id and p.title
    assert p.paper_md and p.paper_md.startswith("# ")
    assert p.addendum and "reproduce.sh" in p.addendum
    assert p.blacklist == ()
    assert (p.path / "blacklist.txt").read_text().strip() == "none"
    ref = p.reference_submission
    assert ref is not None and (ref / "reproduce.sh").is_file()
    assert "reference_submission" not in {f.name for f in p.agent_files()}


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_rubric_size_and_categories(paper_id: str) -> None:
    stats = rubric_stats(paper(paper_id).rubric)
    assert stats.leaves >= 30
    assert all(stats.leaves_by_category[c] >= 5 for c in TASK_CATEGORIES)
    ids = [n.id for _, n in paper(paper_id).rubric.walk()]
    assert len(ids) == len(set(ids))  # our own rubrics keep ids unique


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_every_leaf_is_checked_and_every_result_leaf_checks_numbers(paper_id: str) -> None:
    p = paper(paper_id)
    sidecar = load_sidecar(p.sidecar_path, p.rubric)
    for path, leaf in p.rubric.leaves():
        checks = sidecar.checks_for(leaf, path)
        assert checks, f"{leaf.id} has no check"
        if leaf.task_category == RESULT_ANALYSIS:
            assert all(isinstance(c, JsonValueCheck | JsonCompareCheck) for c in checks), leaf.id


@pytest.mark.parametrize("paper_id", PAPER_IDS)
def test_every_expected_value_is_the_references(paper_id: str) -> None:
    """No bundled check decides in the submission's process: every python check compares
    with the reference on inputs drawn at grading time, none is a bare command, and the
    recompute names the claimed files it reads."""
    p = paper(paper_id)
    sidecar = load_sidecar(p.sidecar_path, p.rubric)
    for checks in sidecar.checks.values():
        for check in checks:
            assert not isinstance(check, CommandCheck), check.source
            if isinstance(check, PythonCheck):
                assert check.compare is not None, check.source
                assert "rng" in check.code and "default_rng(" not in check.code, check.source
    assert sidecar.rerun is not None and sidecar.rerun.recompute
    assert all(r.files for r in sidecar.rerun.recompute)


# --- oracle and noop ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Executed:
    """A reference submission after reproduction, with the time the run started."""

    paper: Paper
    root: Path
    started_at: float
    rerun: Executed | None = None
    env: dict[str, str] | None = None  # the variables reproduce.sh ran with


def reproduce(p: Paper, dest: Path, *command: str, env: dict[str, str] | None = None) -> Executed:
    assert p.reference_submission is not None
    shutil.copytree(p.reference_submission, dest)
    started = time.time()
    result = subprocess.run(
        list(command) or ["bash", "reproduce.sh"],
        cwd=dest,
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return Executed(p, dest, started, env=env)


@pytest.fixture(scope="module", params=PAPER_IDS)
def executed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Executed:
    p = paper(request.param)
    folder = tmp_path_factory.mktemp(request.param)
    # the sidecar's re-run: reproduce.sh again, on a fresh copy, with its seed offset
    again = reproduce(p, folder / "rerun", env=rerun_env(p))
    first = reproduce(p, folder / "submission")
    return Executed(p, first.root, first.started_at, again)


def rerun_env(p: Paper) -> dict[str, str]:
    spec = load_sidecar(p.sidecar_path, p.rubric).rerun
    assert spec is not None
    return dict(spec.env)


async def judge(
    p: Paper,
    submission: Path,
    executed: Path | None,
    started_at: float | None,
    *,
    dev: bool = False,
    rerun: Executed | None = None,
    env: dict[str, str] | None = None,
) -> JudgeResult:
    rubric = code_only(p.rubric) if dev else p.rubric
    assert rubric is not None
    roots = {"submission": submission, "executed": executed or submission}
    again = None
    if rerun is not None:
        roots["rerun"] = rerun.root
        again = Rerun(
            LocalFiles(rerun.root),
            Reproduction(0, started_at=rerun.started_at),
            rerun.env if rerun.env is not None else rerun_env(p),
        )
    judge = CheckJudge(runner=host_command_runner(roots, env=ENV))
    return await judge.judge(
        JudgeInput(
            p,
            rubric,
            LocalFiles(submission),
            LocalFiles(executed) if executed else None,
            Reproduction(0, started_at=started_at, env=env or {}) if executed else None,
            code_dev=dev,
            rerun=again,
        )
    )


async def test_oracle_scores_at_least_0_9(executed: Executed) -> None:
    assert (executed.root / "results" / "metrics.json").is_file()
    result = await judge(
        executed.paper, executed.root, executed.root, executed.started_at, rerun=executed.rerun
    )
    failed = [(n.id, n.explanation) for _, n in result.tree.leaves() if n.score < 1]
    assert result.score >= ORACLE_MIN, failed
    assert result.invalid_leaves == 0, failed
    assert result.flags == ()
    # without the re-run the sidecar asks for, results on the executed submission cannot count
    alone = await judge(executed.paper, executed.root, executed.root, executed.started_at)
    assert alone.invalid_leaves > 0


# a mean of each paper that a check compares with the paper's number, and where its per-seed
# values are, in results/metrics.json
PER_SEED = {
    "tail-averaged-sgd": (("table1", "tail", "mean"), ("per_seed", "table1", "tail")),
    "spectral-shrinkage": (("table1", 0, "optimal"), ("per_seed", "table1", 0, "optimal")),
}


def _at(data: Any, key: tuple[str | int, ...]) -> Any:
    for part in key:
        data = data[part]
    return data


@pytest.mark.parametrize("how", ["per-seed values", "mean"])
async def test_results_the_reference_does_not_give_on_drawn_seeds_are_flagged(
    how: str, executed: Executed, tmp_path: Path
) -> None:
    """The recompute draws seeds at grading time and recomputes them with the reference:
    per-seed values made up for every seed but the first (the mean kept theirs, within the
    paper's tolerance) are not the method's whatever the draw, and a mean that is not its
    per-seed values' contradicts them: either way no check on the executed submission
    passes, flagged."""
    p, rerun = executed.paper, executed.rerun
    assert rerun is not None
    tampered = tmp_path / "rerun"
    shutil.copytree(rerun.root, tampered)
    file = tampered / "results" / "metrics.json"
    data = json.loads(file.read_text())
    mean_key, values_key = PER_SEED[p.id]
    values = _at(data, values_key)
    if how == "mean":
        _at(data, mean_key[:-1])[mean_key[-1]] *= 1.01
    else:
        values[1:] = [v * 1.02 for v in values[1:]]
        _at(data, mean_key[:-1])[mean_key[-1]] = sum(values) / len(values)
        if "sem" in _at(data, mean_key[:-1]):
            _at(data, mean_key[:-1])["sem"] = statistics.stdev(values) / len(values) ** 0.5
    file.write_text(json.dumps(data))
    result = await judge(
        p, executed.root, executed.root, executed.started_at,
        rerun=Executed(p, tampered, rerun.started_at),
    )  # fmt: skip
    [flag] = result.flags
    assert flag.startswith("results not computed: "), flag
    expected = "contradict themselves" if how == "mean" else "the paper's method does not give"
    assert expected in flag and "check seed " in flag, flag
    for _, leaf in result.tree.leaves():
        if leaf.task_category != CODE_DEVELOPMENT:
            assert leaf.score == 0.0, leaf.id


@pytest.mark.parametrize("paper_id", PAPER_IDS)
async def test_noop_scores_at_most_0_1(paper_id: str, tmp_path: Path) -> None:
    empty = tmp_path / "submission"
    empty.mkdir()
    now = time.time()
    nothing = Executed(paper(paper_id), empty, now)
    result = await judge(paper(paper_id), empty, empty, now, rerun=nothing)
    assert result.score <= NOOP_MAX
    assert result.invalid_leaves == 0  # every leaf was checked and honestly failed


async def test_code_without_a_reproduction_earns_only_code_development(
    executed: Executed, tmp_path: Path
) -> None:
    # The agent's repo, never reproduced: only the Code Development leaves can pass.
    p = executed.paper
    code = tmp_path / "code"
    assert p.reference_submission is not None
    shutil.copytree(p.reference_submission, code)
    now = time.time()
    result = await judge(p, code, code, now, rerun=Executed(p, code, now))
    expected = grade_tree(
        p.rubric,
        {
            path: LeafGrade(1.0 if leaf.task_category == CODE_DEVELOPMENT else 0.0)
            for path, leaf in p.rubric.leaves()
        },
    )
    assert result.score == pytest.approx(expected.score)
    assert 0.1 < result.score < 0.9


async def test_results_left_by_the_agent_do_not_count(executed: Executed) -> None:
    # A later reproduction that wrote nothing: the results on disk predate it.
    later = time.time() + 60
    result = await judge(
        executed.paper,
        executed.root,
        executed.root,
        later,
        rerun=Executed(executed.paper, executed.root, later),
    )
    for _, leaf in result.tree.leaves():
        if leaf.task_category != CODE_DEVELOPMENT:
            assert leaf.score == 0.0, leaf.id
    assert result.score < 0.9


async def test_code_dev_variant(executed: Executed, tmp_path: Path) -> None:
    p = executed.paper
    oracle = await judge(p, executed.root, None, None, dev=True)
    assert oracle.score == 1.0
    assert {n.task_category for _, n in oracle.tree.leaves()} == {CODE_DEVELOPMENT}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (await judge(p, empty, None, None, dev=True)).score == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("paper_id", PAPER_IDS)
async def test_tolerances_accept_other_seeds(paper_id: str, tmp_path: Path) -> None:
    # An honest replication draws other random numbers; the checks must still pass it.
    p = paper(paper_id)
    for offset in (1000, 5000):
        run = reproduce(p, tmp_path / str(offset), env={"SEED_OFFSET": str(offset)})
        again = reproduce(p, tmp_path / f"{offset}-rerun", env={"SEED_OFFSET": str(offset + 1)})
        result = await judge(p, run.root, run.root, run.started_at, rerun=again, env=run.env)
        failed = [(n.id, n.explanation) for _, n in result.tree.leaves() if n.score < 1]
        assert result.score == 1.0, failed

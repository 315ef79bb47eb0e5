"""The `check` judge: each check kind, freshness of outputs, commands, and "no check" leaves."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from labcoat.families.paperbench import (
    NO_CHECK,
    CheckJudge,
    CommandRequest,
    CommandResult,
    JudgeInput,
    LocalFiles,
    Paper,
    Reproduction,
    code_only,
    host_command_runner,
    load_paper,
    parse_rubric,
    parse_sidecar,
)

from ._helpers import HOST_ENV, leaf, node

pytestmark = pytest.mark.anyio

RUBRIC = parse_rubric(
    node(
        "root",
        node("impl", leaf("dev-a"), leaf("dev-b")),
        node(
            "run", leaf("exec-a", category="Code Execution"), leaf("ra", category="Result Analysis")
        ),
    )
)
DEV_A, DEV_B, EXEC_A, RA = (0, 0), (0, 1), (1, 0), (1, 1)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "results").mkdir()
    (root / "src" / "step.py").write_text("def step(w, g, lr):\n    return w - lr * g\n")
    (root / "results" / "metrics.json").write_text(
        json.dumps({"loss": {"sgd": 0.52, "tail": 0.21}, "runs": [{"n": 10}], "name": "tail"})
    )
    return root


def paper(tmp_path: Path) -> Paper:
    return Paper(id="toy", title="Toy", path=tmp_path)


async def grade(
    tmp_path: Path,
    repo: Path,
    checks: list[dict],
    *,
    rubric=RUBRIC,
    executed: bool = True,
    reproduction: Reproduction | None = None,
    runner=None,
):
    sidecar = parse_sidecar({"checks": checks}, RUBRIC)
    judge = CheckJudge(runner=runner, sidecar=sidecar)
    view = LocalFiles(repo)
    inp = JudgeInput(paper(tmp_path), rubric, view, view if executed else None, reproduction)
    return await judge.judge(inp)


def grade_at(result, path):
    n = result.tree.at(path)
    return n.score, n.valid_score, n.explanation


async def test_leaves_without_checks_are_visible(tmp_path: Path, repo: Path) -> None:
    result = await grade(
        tmp_path, repo, [{"leaf": "dev-a", "kind": "file_exists", "file": "src/step.py"}]
    )
    assert grade_at(result, DEV_A)[:2] == (1.0, True)
    for path in (DEV_B, EXEC_A, RA):
        score, valid, explanation = grade_at(result, path)
        assert (score, valid, explanation) == (0.0, False, NO_CHECK)
    assert result.invalid_leaves == 3
    assert not result.tree.valid_score
    assert result.score == pytest.approx(0.25)
    assert result.judge == "check"
    assert result.usage.calls == 0


async def test_file_exists_and_regex(tmp_path: Path, repo: Path) -> None:
    result = await grade(
        tmp_path,
        repo,
        [
            {"leaf": "dev-a", "kind": "file_exists", "glob": "src/*.py"},
            {"leaf": "dev-a", "kind": "regex", "file": "src/step.py", "pattern": r"w - lr \* g"},
            {"leaf": "dev-b", "kind": "regex", "glob": "**/*.py", "pattern": "momentum"},
            {"leaf": "exec-a", "kind": "file_exists", "file": "results/absent.json"},
            {"leaf": "ra", "kind": "file_exists", "file": "src/step.py", "min_bytes": 10_000},
        ],
    )
    assert grade_at(result, DEV_A)[:2] == (1.0, True)
    score, valid, explanation = grade_at(result, DEV_B)
    assert (score, valid) == (0.0, True) and "not found" in explanation
    assert grade_at(result, EXEC_A)[:2] == (0.0, True)
    assert grade_at(result, RA)[:2] == (0.0, True)


async def test_regex_ignore_case(tmp_path: Path, repo: Path) -> None:
    check = {"leaf": "dev-a", "kind": "regex", "file": "src/step.py", "pattern": "DEF STEP"}
    assert grade_at(await grade(tmp_path, repo, [check]), DEV_A)[0] == 0.0
    check["ignore_case"] = True
    assert grade_at(await grade(tmp_path, repo, [check]), DEV_A)[0] == 1.0


@pytest.mark.parametrize(
    ("fields", "passed"),
    [
        ({"key": "loss.tail", "value": 0.2, "tolerance": 0.011}, True),
        ({"key": "loss.tail", "value": 0.2, "tolerance": 0.009}, False),
        ({"key": "loss.tail", "value": 0.2, "rel_tolerance": 0.06}, True),
        ({"key": "loss.tail", "value": 0.2, "rel_tolerance": 0.04}, False),
        ({"key": "loss.tail", "value": 0.21}, True),
        ({"key": "loss.sgd", "min": 0.5}, True),
        ({"key": "loss.sgd", "max": 0.5}, False),
        ({"key": "loss.sgd", "min": 0.4, "max": 0.6}, True),
        ({"key": "runs[0].n", "value": 10}, True),
        ({"key": "runs[1].n", "value": 10}, False),
        ({"key": "name", "value": "tail"}, True),
        ({"key": "name", "value": "sgd"}, False),
        ({"key": "name", "min": 0}, False),  # not a number
        ({"key": "loss.adam", "value": 0.2}, False),
    ],
)
async def test_json_value(tmp_path: Path, repo: Path, fields: dict, passed: bool) -> None:
    check = {"leaf": "ra", "kind": "json_value", "file": "results/metrics.json", **fields}
    score, valid, _ = grade_at(await grade(tmp_path, repo, [check]), RA)
    assert (score, valid) == (float(passed), True)


@pytest.mark.parametrize(
    ("op", "factor", "passed"),
    [("<", 1.0, True), ("<", 0.5, True), ("<", 0.4, False), (">=", 1.0, False), (">", 0.3, True)],
)
async def test_json_compare(
    tmp_path: Path, repo: Path, op: str, factor: float, passed: bool
) -> None:
    check = {
        "leaf": "ra",
        "kind": "json_compare",
        "file": "results/metrics.json",
        "left": "loss.tail",
        "op": op,
        "right": "loss.sgd",
        "factor": factor,
    }
    assert grade_at(await grade(tmp_path, repo, [check]), RA)[:2] == (float(passed), True)


async def test_bad_json_fails(tmp_path: Path, repo: Path) -> None:
    (repo / "results" / "metrics.json").write_text("{nan")
    check = {
        "leaf": "ra",
        "kind": "json_value",
        "file": "results/metrics.json",
        "key": "a",
        "value": 1,
    }
    score, valid, explanation = grade_at(await grade(tmp_path, repo, [check]), RA)
    assert (score, valid) == (0.0, True) and "not valid JSON" in explanation


async def test_outputs_must_be_written_by_the_reproduction(tmp_path: Path, repo: Path) -> None:
    started = time.time()
    old = started - 3600
    os.utime(repo / "results" / "metrics.json", (old, old))
    check = {
        "leaf": "ra",
        "kind": "json_value",
        "file": "results/metrics.json",
        "key": "loss.tail",
        "value": 0.21,
    }
    repro = Reproduction(exit_code=0, started_at=started)
    score, valid, explanation = grade_at(
        await grade(tmp_path, repo, [check], reproduction=repro), RA
    )
    assert (score, valid) == (0.0, True)
    assert "not written by the reproduction run" in explanation
    # a file rewritten by the run counts
    os.utime(repo / "results" / "metrics.json", (started + 1, started + 1))
    assert grade_at(await grade(tmp_path, repo, [check], reproduction=repro), RA)[0] == 1.0
    # `fresh: false` opts out; without a start time nothing can be told apart
    os.utime(repo / "results" / "metrics.json", (old, old))
    stale_ok = {**check, "fresh": False}
    assert grade_at(await grade(tmp_path, repo, [stale_ok], reproduction=repro), RA)[0] == 1.0
    assert grade_at(await grade(tmp_path, repo, [check]), RA)[0] == 1.0
    # submission-side checks never look at mtimes
    dev = {"leaf": "dev-a", "kind": "file_exists", "file": "results/metrics.json"}
    assert grade_at(await grade(tmp_path, repo, [dev], reproduction=repro), DEV_A)[0] == 1.0


async def test_the_measured_list_of_outputs_beats_mtimes(tmp_path: Path, repo: Path) -> None:
    # the harness measured what the run wrote: mtimes (and their slack) no longer decide
    started = time.time()
    check = {
        "leaf": "ra",
        "kind": "json_value",
        "file": "results/metrics.json",
        "key": "loss.tail",
        "value": 0.21,
    }
    fresh_but_not_written = Reproduction(0, started_at=started - 60, changed_files=())
    score, _, explanation = grade_at(
        await grade(tmp_path, repo, [check], reproduction=fresh_but_not_written), RA
    )
    assert score == 0.0 and "not written by the reproduction run" in explanation
    old = started - 3600
    os.utime(repo / "results" / "metrics.json", (old, old))
    written = Reproduction(0, started_at=started, changed_files=("results/metrics.json",))
    assert grade_at(await grade(tmp_path, repo, [check], reproduction=written), RA)[0] == 1.0


async def test_code_dev_has_no_executed_view(tmp_path: Path, repo: Path) -> None:
    checks = [
        {"leaf": "dev-b", "kind": "file_exists", "file": "src/step.py"},
        {"leaf": "ra", "kind": "file_exists", "file": "results/metrics.json"},
    ]
    result = await grade(tmp_path, repo, checks, executed=False)
    score, valid, explanation = grade_at(result, RA)
    assert (score, valid) == (0.0, False) and "reproduction was skipped" in explanation
    # Code-Dev grades the reduced tree; sidecar addresses still find their leaves
    reduced = code_only(RUBRIC)
    assert reduced is not None
    result = await grade(tmp_path, repo, checks, rubric=reduced, executed=False)
    assert [n.id for _, n in result.tree.leaves()] == ["dev-a", "dev-b"]
    assert grade_at(result, (0, 1))[:2] == (1.0, True)
    assert grade_at(result, (0, 0))[2] == NO_CHECK


async def test_all_checks_of_a_leaf_must_pass(tmp_path: Path, repo: Path) -> None:
    checks = [
        {"leaf": "dev-a", "kind": "file_exists", "file": "src/step.py"},
        {"leaf": "dev-a", "kind": "file_exists", "file": "src/missing.py"},
        {"leaf": "dev-a", "kind": "file_exists", "file": "src/step.py"},
    ]
    score, valid, explanation = grade_at(await grade(tmp_path, repo, checks), DEV_A)
    assert (score, valid) == (0.0, True)
    # it stops at the first failure
    assert explanation.count("PASS") == 1 and explanation.count("FAIL") == 1


async def test_command_checks_use_the_injected_runner(tmp_path: Path, repo: Path) -> None:
    seen: list[CommandRequest] = []

    async def runner(request: CommandRequest) -> CommandResult:
        seen.append(request)
        ok = "good" in request.command
        return CommandResult(0 if ok else 3, stdout="ok 42\n", stderr="" if ok else "boom")

    checks = [
        {"leaf": "dev-a", "kind": "command", "run": "good", "timeout": 7},
        {"leaf": "dev-b", "kind": "command", "run": "bad"},
        {"leaf": "exec-a", "kind": "command", "run": "good", "stdout_regex": r"^ok \d+$"},
        {"leaf": "ra", "kind": "command", "run": "good", "stdout_regex": "nope"},
    ]
    result = await grade(tmp_path, repo, checks, runner=runner)
    assert grade_at(result, DEV_A)[:2] == (1.0, True)
    score, valid, explanation = grade_at(result, DEV_B)
    assert (score, valid) == (0.0, True) and "exited 3, expected 0: boom" in explanation
    assert grade_at(result, EXEC_A)[:2] == (1.0, True)
    assert grade_at(result, RA)[:2] == (0.0, True)
    assert [(r.where, r.timeout) for r in seen[:2]] == [("submission", 7.0), ("submission", 120.0)]
    assert seen[2].where == "executed"


async def test_command_without_runner_or_with_a_broken_one_is_invalid(
    tmp_path: Path, repo: Path
) -> None:
    checks = [{"leaf": "dev-a", "kind": "command", "run": "true"}]
    score, valid, explanation = grade_at(await grade(tmp_path, repo, checks), DEV_A)
    assert (score, valid) == (0.0, False) and "no command runner" in explanation

    async def broken(request: CommandRequest) -> CommandResult:
        raise RuntimeError("sandbox gone")

    score, valid, explanation = grade_at(await grade(tmp_path, repo, checks, runner=broken), DEV_A)
    assert (score, valid) == (0.0, False) and "sandbox gone" in explanation


async def test_host_runner(tmp_path: Path, repo: Path) -> None:
    runner = host_command_runner({"submission": repo, "executed": repo}, env=HOST_ENV)
    result = await runner(CommandRequest("cat src/step.py | head -1; exit 4", "submission", 10))
    assert result.exit_code == 4 and result.stdout.startswith("def step")
    result = await runner(CommandRequest("sleep 5", "submission", 0.3))
    assert result.timed_out
    checks = [{"leaf": "dev-a", "kind": "command", "run": "test -f src/step.py"}]
    assert grade_at(await grade(tmp_path, repo, checks, runner=runner), DEV_A)[0] == 1.0


async def test_sidecar_is_read_from_the_paper_folder(tmp_path: Path, repo: Path) -> None:
    paper_dir = tmp_path / "paper"
    paper_dir.mkdir()
    (paper_dir / "config.yaml").write_text("id: toy\n")
    (paper_dir / "rubric.json").write_text(json.dumps(RUBRIC.to_dict()))
    (paper_dir / "labcoat.yaml").write_text(
        "checks:\n  - leaf: dev-a\n    kind: file_exists\n    file: src/step.py\n"
    )
    p = load_paper(paper_dir)
    view = LocalFiles(repo)
    result = await CheckJudge().judge(JudgeInput(p, p.rubric, view, view))
    assert grade_at(result, DEV_A)[:2] == (1.0, True)
    assert result.invalid_leaves == 3


async def test_local_files_stay_inside_the_root(tmp_path: Path, repo: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("expected numbers")
    (repo / "link.txt").symlink_to(secret)
    view = LocalFiles(repo)
    assert await view.read_text("src/step.py") is not None
    assert await view.read_text("../secret.txt") is None
    assert await view.read_text(str(secret)) is None
    assert await view.read_text("link.txt") is None
    assert "link.txt" not in await view.list_files()
    assert await view.mtime("link.txt") is None
    assert await view.list_files("results/*") == ["results/metrics.json"]


# --- python checks and the re-seeded re-run -----------------------------------------------------

CHECK_CODE = "import numpy as np\nfrom pkg import f\nassert np.allclose(f(), 2.0), f()\n"
# prints the completion token found in the bootstrap's closures, then leaves
GC_TOKEN_THIEF = """
import gc, os
for obj in gc.get_objects():
    cells = getattr(obj, "__closure__", None) or ()
    for cell in cells:
        value = cell.cell_contents
        if isinstance(value, str) and value.startswith("labcoat-check-done-"):
            print(value)
            os._exit(0)
def f():
    return 3.0
"""

# the right value, after reading the process's memory map through a descriptor of /proc
PROC_FD_MAPS = """
import os
proc = os.open("/proc", os.O_RDONLY)
maps = os.open("self/maps", os.O_RDONLY, dir_fd=proc)
assert os.read(maps, 4096)
def f():
    return 2.0
"""
# the right value, after opening /proc/self/mem through a path object (numpy reads it)
# (ResearchCodeBench's cheat `proc-mem-via-pathlike`: the guard is one source)
PATHLIKE_MEM = """
import numpy as np
class Where:
    def __fspath__(self):
        return "/proc/self/mem"
try:
    np.fromfile(Where(), dtype=np.uint8, count=8)
except OSError:
    pass
def f():
    return 2.0
"""


@pytest.mark.parametrize(
    ("init", "passes", "why"),
    [
        ("def f():\n    return 2.0\n", True, "ran to its end"),
        ("import os\nos._exit(0)\n", False, "before the check's code ran to its end"),
        ("import sys\nsys.exit(0)\n", False, "stopped before its end: SystemExit(0)"),
        ("raise SystemExit\n", False, "stopped before its end"),
        (
            "import numpy\nnumpy.allclose = lambda *a, **k: True\ndef f():\n    return 3.0\n",
            False,
            "patched during the check: numpy.allclose",
        ),
        ("def f():\n    return 3.0\n", False, "AssertionError: 3.0"),
        # round two: deeper than numpy's top level, and through the token's own closure
        (
            "import numpy._core.numeric as n\nn.isclose = lambda *a, **k: True\n"
            "def f():\n    return 3.0\n",
            False,
            "patched during the check: numpy._core.numeric.isclose",
        ),
        (GC_TOKEN_THIEF, False, "memory or objects (gc.get_objects)"),
        # round four: /proc opened as a descriptor, then self/maps relative to it (the
        # guard is ResearchCodeBench's, one source: labcoat/grading/_audit_guard.py)
        (PROC_FD_MAPS, False, "opened /proc as a descriptor (reaches /proc unseen)"),
        (PATHLIKE_MEM, False, "opened /proc/self/mem"),
        (
            "import sys\nf = lambda: 3.0\nsys.audit('labcoat.done')\n",
            False,
            "AssertionError: 3.0",
        ),
    ],
)
async def test_python_checks_must_run_to_their_end(
    tmp_path: Path, repo: Path, init: str, passes: bool, why: str
) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text(init)
    runner = host_command_runner({"submission": repo, "executed": repo}, env=HOST_ENV)
    result = await grade(
        tmp_path, repo, [{"leaf": "dev-a", "kind": "python", "code": CHECK_CODE}], runner=runner
    )
    score, valid, explanation = grade_at(result, DEV_A)
    assert (score, valid) == (1.0 if passes else 0.0, True), explanation
    assert why in explanation


async def test_a_submission_folder_cannot_stand_in_for_an_installed_package(
    tmp_path: Path, repo: Path
) -> None:
    (repo / "numpy").mkdir()  # a fake numpy whose allclose always agrees
    (repo / "numpy" / "__init__.py").write_text("def allclose(*a, **k):\n    return True\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("def f():\n    return 3.0\n")
    runner = host_command_runner({"submission": repo, "executed": repo}, env=HOST_ENV)
    result = await grade(
        tmp_path, repo, [{"leaf": "dev-a", "kind": "python", "code": CHECK_CODE}], runner=runner
    )
    score, _, explanation = grade_at(result, DEV_A)
    assert score == 0.0 and "AssertionError" in explanation


def test_python_checks_must_compile() -> None:
    from labcoat._errors import TaskDataError

    bad = {"checks": [{"leaf": "dev-a", "kind": "python", "code": "def (:\n"}]}
    with pytest.raises(TaskDataError, match=r"checks\[0\]\.code: not valid Python"):
        parse_sidecar(bad, RUBRIC)
    rerun = {"rerun": {"env": {"SEED": "{seed}"}, "must_change": []}, "checks": []}
    with pytest.raises(TaskDataError, match=r"rerun\.must_change: must list"):
        parse_sidecar(rerun, RUBRIC)


TAIL_CHECK = {
    "leaf": "ra", "kind": "json_value", "file": "results/metrics.json",
    "key": "loss.tail", "value": 0.2, "rel_tolerance": 0.1,
}  # fmt: skip


async def judge_rerun(
    tmp_path: Path, repo: Path, rerun_spec: dict, tail_again: float, check_seed: int | None = None
) -> tuple[float, tuple[str, ...]]:
    """The check judge on `repo` and a re-run whose `loss.tail` is `tail_again`:
    (the score of leaf ra, the flags)."""
    from labcoat.families.paperbench import Rerun

    again = tmp_path / "again"
    (again / "results").mkdir(parents=True, exist_ok=True)
    sidecar = parse_sidecar({"rerun": rerun_spec, "checks": [TAIL_CHECK]}, RUBRIC)
    data = json.loads((repo / "results" / "metrics.json").read_text())
    data["loss"]["tail"] = tail_again
    (again / "results" / "metrics.json").write_text(json.dumps(data))
    rerun = Rerun(LocalFiles(again), Reproduction(0, started_at=0.0), {"SEED": "7"}, check_seed)
    view = LocalFiles(repo)
    inp = JudgeInput(
        paper(tmp_path), RUBRIC, view, view, Reproduction(0, started_at=0.0), rerun=rerun
    )
    runner = host_command_runner(
        {"submission": repo, "executed": repo, "rerun": again}, env=HOST_ENV
    )
    reference = tmp_path / "reference"  # the recompute's own code is the whole reference
    reference.mkdir(exist_ok=True)
    judge = CheckJudge(runner=runner, sidecar=sidecar, reference=reference)
    result = await judge.judge(inp)
    return result.tree.at(RA).score, result.flags


MUST_CHANGE = [{"file": "results/metrics.json", "key": "loss.tail"}]


async def test_results_that_do_not_change_with_the_seed_count_for_nothing(
    tmp_path: Path, repo: Path
) -> None:
    spec = {"env": {"SEED": "7"}, "must_change": MUST_CHANGE}
    assert await judge_rerun(tmp_path, repo, spec, 0.19) == (1.0, ())  # changed, in tolerance
    score, flags = await judge_rerun(tmp_path, repo, spec, 0.21)  # the first run's number
    assert score == 0.0 and any(
        "did not change when reproduce.sh ran again with SEED=7" in f for f in flags
    )
    assert (await judge_rerun(tmp_path, repo, spec, 0.5))[0] == 0.0  # changed, but wrong


# The reference's value of loss.tail in each run: 0.21 in the first, 0.19 with SEED=7. The
# code runs on the reference only; it reads the claimed file as text and the run's variables.
RECOMPUTE = """
import json
reported = json.loads(files["results/metrics.json"])["loss"]["tail"]
truth = {"": 0.21, "7": 0.19}[env.get("SEED", "")]
result = {"loss.tail": [[None, reported, truth]]}
"""


async def test_results_the_reference_does_not_give_count_for_nothing(
    tmp_path: Path, repo: Path
) -> None:
    """Numbers that change with the seed pass `must_change`; `recompute` holds them to the
    reference's values, in both reproductions."""
    spec = {
        "env": {"SEED": "7"},
        "must_change": MUST_CHANGE,
        "recompute": [{"code": RECOMPUTE, "files": ["results/metrics.json"], "note": "tail"}],
    }
    assert await judge_rerun(tmp_path, repo, spec, 0.19) == (1.0, ())  # the reference's
    score, flags = await judge_rerun(tmp_path, repo, spec, 0.195)  # moved, in tolerance
    assert score == 0.0
    assert any(
        "the paper's method does not give" in f and "reported 0.195" in f and "gives 0.19 " in f
        for f in flags
    ), flags


DRAWN_BY_THE_HARNESS = """
assert isinstance(check_seed, int), check_seed
assert check_seed % 2 == 0, f"odd draw {check_seed}"  # the draw decides what the check does
assert run in (0, 1) and rng.integers(10) >= 0  # one generator per reproduction, from the draw
result = {}
"""


async def test_recompute_checks_get_the_graders_draw(tmp_path: Path, repo: Path) -> None:
    """The reference's process gets the harness's draw (made after both runs) when it gives
    one, else the judge's own; a failure names it, so the grading can be replayed."""
    spec = {
        "env": {"SEED": "7"},
        "must_change": MUST_CHANGE,
        "recompute": [{"code": DRAWN_BY_THE_HARNESS, "files": ["results/metrics.json"]}],
    }
    assert await judge_rerun(tmp_path, repo, spec, 0.19, check_seed=42) == (1.0, ())
    score, flags = await judge_rerun(tmp_path, repo, spec, 0.19, check_seed=43)
    assert score == 0.0
    assert any("check seed 43" in f and "odd draw 43" in f for f in flags), flags
    # without the harness's draw the judge draws its own, afresh each time
    spec["recompute"] = [{"code": "assert False, check_seed", "files": ["results/metrics.json"]}]
    draws = {(await judge_rerun(tmp_path, repo, spec, 0.19))[1] for _ in range(3)}
    assert len(draws) == 3, draws


def test_recompute_checks_must_compile() -> None:
    from labcoat._errors import TaskDataError

    bad = {
        "rerun": {
            "env": {"SEED": "7"},
            "must_change": [{"file": "r.json", "key": "a"}],
            "recompute": [{"code": "def (:\n", "files": ["r.json"]}],
        },
        "checks": [],
    }
    with pytest.raises(TaskDataError, match=r"rerun\.recompute\[0\]\.code: not valid Python"):
        parse_sidecar(bad, RUBRIC)


async def test_the_check_judge_refuses_a_paper_without_checks(tmp_path: Path, repo: Path) -> None:
    from labcoat._errors import LabcoatError

    view = LocalFiles(repo)
    with pytest.raises(LabcoatError, match=r"needs the paper's labcoat\.yaml"):
        await CheckJudge().judge(JudgeInput(paper(tmp_path), RUBRIC, view, view))

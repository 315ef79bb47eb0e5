"""Issue 39's ResearchGym attacks on what the scorer keeps and records, each run as the
agent's own commands in its real sandbox, through Inspect's eval of the bundled task:

- bytecode beside a constant learner, stamped so that Python trusts it: the grader must
  run the source it keeps, so the first grading and `labcoat regrade` agree (and the
  run earns what the constant learner earns);
- git filters, hooks and other config-driven commands in the agent's repository: the
  history capture after grading must run none of them, within the scoring time.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest
from inspect_ai import Task, eval, task_with
from inspect_ai.log import EvalSample
from inspect_ai.scorer import Score
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from labcoat.families.researchgym import researchgym
from labcoat.grading import KEPT
from labcoat.integrity import INTEGRITY_FLAGS
from labcoat.regrade import regrade_logs
from labcoat.suites import SUITES_DIR

WORKDIR = "/home/agent/work"
TASK = SUITES_DIR / "mini" / "researchgym" / "class-incremental"
REAL_LEARNER = (TASK / "reference" / "submission" / "learner.py").read_text()
NOOP_MAX = 0.1
"""What a run that does nothing may score (the validation bound of a noop)."""

CONSTANT_LEARNER = '''"""Always the first class it saw."""
import os

import numpy as np


class Learner:
    def __init__(self):
        self.first = 0

    def learn(self, X, y):
        self.first = int(y[0]) if self.first == 0 else self.first

    def predict(self, X):
        return np.full(len(X), self.first, dtype=np.int64)

    def save(self, folder):
        np.save(os.path.join(folder, "first.npy"), np.array([self.first]))

    @classmethod
    def load(cls, folder):
        learner = cls()
        learner.first = int(np.load(os.path.join(folder, "first.npy"))[0])
        return learner
'''


def run(task: Task, log_dir: Path) -> tuple[EvalSample, Score]:
    [log] = eval(task, model="mockllm/model", log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    assert log.samples is not None
    [sample] = log.samples
    assert sample.error is None, sample.error
    assert sample.scores is not None
    return sample, next(iter(sample.scores.values()))


async def sh(command: str) -> str:
    """What the agent's bash tool does."""
    result = await sandbox().exec(["bash", "-c", command], cwd=WORKDIR, timeout=300)
    assert result.success, result.stderr
    return result.stdout


# The real learner compiled, then the source swapped for a constant one of the same size
# and modification time: the `.pyc`'s stamp (mtime, size) still matches, so Python runs
# the real learner's bytecode wherever the `__pycache__` comes along (a copy2 keeps it).
STAMPED_BYTECODE = """set -e
cd submission
python3 -c 'import py_compile; print(py_compile.compile("learner.py", doraise=True))'
mtime=$(stat -c %Y learner.py); size=$(stat -c %s learner.py)
cp constant.py learner.py && rm constant.py
python3 - "$size" <<'EOF'
import sys
size = int(sys.argv[1])
text = open("learner.py").read()
pad = size - len(text.encode())
assert pad >= 2, pad
open("learner.py", "w").write(text + "#" * (pad - 1) + "\\n")
EOF
touch -d "@$mtime" learner.py
ls -la --time-style=+%s . __pycache__
"""


# Bytecode with no source at all: Python imports `helpers.pyc` from a folder on sys.path
# when there is no `helpers.py` (the keep never saves `*.pyc`), so the source that is
# kept names a module that only the grader saw.
SOURCELESS_BYTECODE = """set -e
cd submission
python3 -c 'import py_compile; py_compile.compile("learner.py", cfile="helpers.pyc")'
echo "from helpers import Learner  # noqa" > learner.py
rm constant.py
"""
ATTACKS = {"stamped": STAMPED_BYTECODE, "sourceless": SOURCELESS_BYTECODE}


@solver
def bytecode_agent(script: str) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sandbox().write_file(f"{WORKDIR}/submission/learner.py", REAL_LEARNER)
        await sandbox().write_file(f"{WORKDIR}/submission/constant.py", CONSTANT_LEARNER)
        await sh(script)
        return state

    return solve


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_bytecode_the_source_does_not_hold_gains_nothing(attack: str, tmp_path: Path) -> None:
    task = task_with(
        researchgym(tasks="class-incremental", agent="noop"),
        solver=bytecode_agent(ATTACKS[attack]),
    )
    _, score = run(task, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    first = score.value["normalized"]
    kept = score.metadata[KEPT]
    assert "error" not in kept, kept
    manifest = json.loads((tmp_path / kept["manifest"]).read_text())
    assert not [p for p in manifest["files"] if p.endswith(".pyc")]
    _, rows = regrade_logs(tmp_path, display="none")
    [row] = rows
    assert row.error is None and row.not_regradable is None, row
    assert row.new == first, f"graded {first}, regraded {row.new}: the grader ran other files"
    assert first <= NOOP_MAX, f"the real learner's bytecode scored {first}"
    # the bytecode the grader would have run is gone from what it graded, and said so
    assert kept["bytecode_removed"] >= 1
    assert not score.metadata[INTEGRITY_FLAGS]


# Every way a repository's own configuration or attributes can make git run a program:
# each program would hang the capture for an hour (and leave a mark if it got to run).
HANG = "sleep 3600"
HOSTILE_REPOSITORY = f"""set -e
git config core.hooksPath .hooks
mkdir -p .hooks && printf '#!/bin/sh\\n{HANG}\\n' > .hooks/pre-commit
cp .hooks/pre-commit .hooks/post-commit && cp .hooks/pre-commit .hooks/commit-msg
chmod +x .hooks/*
printf '#!/bin/sh\\n{HANG}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
printf '*.py filter=x diff=x\\n* filter=lfs\\n' > .gitattributes
git config filter.x.clean {shlex.quote(HANG)}
git config filter.x.smudge {shlex.quote(HANG)}
git config filter.x.required true
git config filter.lfs.process {shlex.quote(HANG)}
git config diff.x.textconv {shlex.quote(HANG)}
git config diff.x.command {shlex.quote(HANG)}
git config diff.external {shlex.quote(HANG)}
git config core.fsmonitor {shlex.quote(HANG)}
git config core.pager {shlex.quote(HANG)}
git config log.showSignature true
git config gpg.program {shlex.quote(HANG)}
git config commit.gpgSign true
printf '[filter "y"]\\n\\tclean = {HANG}\\n' > .git/more.config
git config include.path more.config
printf 'data/* filter=y\\n' >> .gitattributes
git config core.worktree /
# a nested repository whose own filter runs when its worktree is checked
mkdir -p nested && cd nested && git init -q && git config filter.x.clean {shlex.quote(HANG)}
printf '* filter=x\\n' > .gitattributes && echo a > a.txt
cd ..
mkdir -p submission && echo "x = 1  # after the last commit" > submission/notes.py
"""


# The attack as found: a clean filter that sleeps, which `git add -A` ran with the
# repository's own config under a fixed 600 s timeout, past Inspect's scoring limit.
SLEEPING_FILTER = """set -e
printf 'submission/*.py filter=x\\n' > .gitattributes
git config filter.x.clean 'sleep 560'
mkdir -p submission && cp baseline/learner.py submission/learner.py
"""


@solver
def commands(script: str) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sh(script)
        return state

    return solve


def scored_quickly(script: str, log_dir: Path) -> tuple[Score, float]:
    """The run of the agent that runs `script`, and how long it took: with a short time
    limit, so that a hang in scoring shows as an error within minutes."""
    task = task_with(
        researchgym(tasks="class-incremental", agent="noop"),
        solver=commands(script),
        time_limit=240,
    )
    started = time.monotonic()
    _, score = run(task, log_dir)
    return score, time.monotonic() - started


def test_a_sleeping_clean_filter_neither_runs_nor_costs_the_score(tmp_path: Path) -> None:
    score, seconds = scored_quickly(SLEEPING_FILTER, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["completion_rate"] == 1.0  # the baseline's learner, graded
    history = score.metadata["workspace_git"]
    assert history["captured"], history
    assert "submission/learner.py" in history["diff_stat"]
    assert seconds < 90, f"scoring took {seconds:.0f} s"


def test_a_hostile_repository_runs_nothing_and_hides_nothing(tmp_path: Path) -> None:
    score, seconds = scored_quickly(HOSTILE_REPOSITORY, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    history = score.metadata["workspace_git"]
    # nothing the repository named ran (each would have hung the capture for an hour),
    # and its config could not keep the final changes out of the record
    assert history["captured"], history
    assert "final state" in history["log"] and "notes.py" in history["diff_stat"]
    assert seconds < 90, f"scoring took {seconds:.0f} s"

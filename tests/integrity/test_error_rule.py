"""The error rule, against its cheat: sabotage the scoring of a bad run so it errors.

One honest-looking run scores 3.45; the other breaks its own scoring (the grader crashes
on what the agent left). Whatever a table shows — `labcoat eval`'s, `labcoat validate`'s,
the analysis tables, the report — the mean counts the errored run as 0: 1.725, never 3.45.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver

from labcoat._cli._tables import print_results
from labcoat._run._results import collect_results
from labcoat.families._score import research_score


@solver
def agent_leaves():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        # what the agent left: a good result, or something that breaks the grader
        state.store.set("left", "3.45" if state.epoch == 1 else "garbage")
        return state

    return solve


@scorer(metrics=[mean()])
def fragile_grader():
    async def score(state: TaskState, target: Target) -> Score:
        left = state.store.get("left")
        value = float(left)  # "garbage" raises: the run errors
        return research_score(value, value)

    return score


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("error-rule")
    task = Task(
        dataset=[Sample(id="demo/main", input="x", metadata={"task_id": "demo/main"})],
        epochs=2,  # run 1 honest-looking, run 2 sabotaged
        solver=agent_leaves(),
        scorer=fragile_grader(),
        metadata={"labcoat_family": "rebench", "agent": "research"},
        name="error-rule",
    )
    eval(task, model="mockllm/model", log_dir=str(folder), display="none", fail_on_error=False)
    return folder


def test_the_eval_and_validate_tables_count_the_sabotaged_run(logs: Path, capsys) -> None:
    [location] = [str(p) for p in logs.glob("*.eval")]
    [result] = collect_results([read_eval_log(location, header_only=True)])
    assert result.runs == 2 and result.errors == 1
    assert result.normalized_mean == pytest.approx(1.725)
    print_results([result], "labcoat eval")
    table = capsys.readouterr().out
    assert "1.725" in table  # the normalized column (raw is over the scored runs, and says so)
    assert "count as 0" in table  # the rule, stated under the table


def test_the_analysis_and_report_count_it_too(logs: Path) -> None:
    from labcoat import analysis as an
    from labcoat.report import build_report

    data = an.read_runs(logs)
    [row] = an.task_summary(data).to_dict("records")
    assert row["errors"] == 1 and row["mean"] == pytest.approx(1.725)
    assert row["mean_scored"] == pytest.approx(3.45)  # shown separately, never as the mean
    [board] = an.leaderboard(data).to_dict("records")
    assert board["mean"] == pytest.approx(1.725)
    assert "1.73" in build_report(data) or "1.725" in build_report(data)

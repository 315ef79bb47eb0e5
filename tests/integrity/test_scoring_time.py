"""A grader that hangs must time out inside the scorer (the floor score and a flag), not
run past Inspect's scoring time limit, where the sample would end as an error."""

from __future__ import annotations

import anyio
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver

from labcoat.grading import bounded_by_scoring_time, scoring_deadline, within_scoring_time

SAMPLE_TIME_LIMIT = 6  # Inspect gives scoring half: 3 s


@scorer(metrics=[mean()])
def hanging_grader(bounded: bool):
    async def score(state: TaskState, target: Target) -> Score:
        timeout = within_scoring_time(3600) if bounded else 3600
        with anyio.move_on_after(timeout) as scope:
            await anyio.sleep(100)  # the grader hangs
        return Score(value=0.0, metadata={"timed_out": scope.cancelled_caught})

    return bounded_by_scoring_time(score)


@solver
def does_nothing():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state  # no model call: mockllm would count tokens with a downloaded encoding

    return solve


def _run(bounded: bool, tmp_path) -> object:
    task = Task(
        dataset=[Sample(input="x")],
        solver=does_nothing(),
        scorer=hanging_grader(bounded),
        time_limit=SAMPLE_TIME_LIMIT,
    )
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    [sample] = log.samples or []
    return sample


def test_a_hanging_grader_times_out_inside_the_scorer(tmp_path) -> None:
    sample = _run(bounded=True, tmp_path=tmp_path)
    assert sample.error is None
    [score] = sample.scores.values()
    assert score.metadata["timed_out"] is True


def test_without_the_budget_it_would_be_an_error(tmp_path) -> None:
    sample = _run(bounded=False, tmp_path=tmp_path)
    assert sample.error is not None and "Time limit" in sample.error.message


def test_outside_a_sample_the_timeout_stands() -> None:
    with scoring_deadline():
        assert within_scoring_time(42.0) == pytest.approx(42.0)

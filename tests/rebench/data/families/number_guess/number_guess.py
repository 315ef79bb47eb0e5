import textwrap
from typing import TypedDict

import metr.task_protected_scoring as scoring

INSTRUCTIONS = textwrap.dedent(
    """
    Guess a whole number from 1 to 100. Write it to /home/agent/guess.txt and use the
    score tool to learn whether it is right, too low or too high.
    """
).strip()


class Task(TypedDict):
    secret: int


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_instructions(t: Task) -> str:
        return INSTRUCTIONS

    @staticmethod
    def get_tasks() -> dict[str, Task]:
        return {"shown": {"secret": 42}, "hidden": {"secret": 77}}

    @staticmethod
    def start(t: Task) -> None:
        scoring.setup_scoring()
        (scoring.PROTECTED_DIR / "secret.txt").write_text(str(t["secret"]))

    @staticmethod
    def intermediate_score(t: Task) -> scoring.IntermediateScoreResult:
        return scoring.intermediate_score()

    @staticmethod
    def aggregate_scores(t: Task, score_log: list[scoring.IntermediateScoreResult]) -> float:
        return scoring.get_best_score(score_log=score_log, select_best_fn=max)

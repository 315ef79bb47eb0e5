"""Intermediate scoring with the family's own aggregate (as METR's scoring test family):
each score is the number in /home/agent/number.txt; the final score is their mean,
maximum or minimum."""

import pathlib
import statistics

import metr.task_protected_scoring as scoring

NUMBER = pathlib.Path("/home/agent/number.txt")


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_instructions(t: dict) -> str:
        return f"Write a number to {NUMBER} and score it."

    @staticmethod
    def get_tasks() -> dict:
        return {
            "avg": {"pick": "avg"},
            "max": {"pick": "max"},
            "min": {"pick": "min"},
            "broken_scorer": {"pick": "broken"},
        }

    @staticmethod
    def start(t: dict) -> None:
        scoring.setup_scoring()

    @staticmethod
    def intermediate_score(t: dict) -> scoring.IntermediateScoreResult:
        if t["pick"] == "broken":
            raise RuntimeError("this scorer is broken")
        try:
            result = scoring.IntermediateScoreResult(
                score=float(NUMBER.read_text()), message={"read": NUMBER.read_text().strip()}, details={}
            )
        except (OSError, ValueError) as ex:
            result = scoring.IntermediateScoreResult(score=float("nan"), message={"error": str(ex)}, details={})
        scoring.log_score(**result)
        return result

    @staticmethod
    def aggregate_scores(t: dict, score_log: list) -> float:
        pick = {"avg": statistics.fmean, "max": max, "min": min}[t["pick"]]
        return scoring.get_best_score(score_log=score_log, select_best_fn=pick)

"""Asks for 64 H100s (manifest.yaml): no machine that runs the tests has them."""


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_tasks() -> dict:
        return {"main": {}}

    @staticmethod
    def get_instructions(t: dict) -> str:
        return "Train something large."

    @staticmethod
    def score(t: dict, submission: str) -> float:
        return 0.0

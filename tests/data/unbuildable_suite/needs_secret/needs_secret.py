"""Needs a secret nobody sets (as families needing HF_TOKEN do); its tasks come from code."""

import os

SECRET = "LABCOAT_UNBUILDABLE_SUITE_TOKEN"


class TaskFamily:
    standard_version = "0.5.0"
    required_environment_variables = ["LABCOAT_UNBUILDABLE_SUITE_TOKEN"]

    @staticmethod
    def get_tasks() -> dict:
        tasks = {}
        for name in ("main", "other"):  # built, not spelled out: only the code lists them
            tasks[name] = {"token": os.environ[SECRET]}
        return tasks

    @staticmethod
    def get_instructions(t: dict) -> str:
        return "Use the token."

    @staticmethod
    def score(t: dict, submission: str) -> float:
        return 0.0

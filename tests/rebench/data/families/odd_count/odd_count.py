import os
from typing import TypedDict


class Task(TypedDict):
    name: str
    digits: list[int]
    answer: str


tasks: dict[str, Task] = {
    "main": {"name": "main", "digits": [3, 8, 5, 2, 2, 9], "answer": "3"},
    "hard": {"name": "hard", "digits": [7, 1, 4, 4, 9, 3, 5, 0, 8, 1], "answer": "6"},
    "manual": {"name": "manual", "digits": [], "answer": "17"},
}


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_instructions(t: Task) -> str:
        if t["name"] == "manual":
            return "A person grades this one. What is 9 + 8? Answer with the number only."
        return f"How many odd digits are in {t['digits']}? Answer with the number only."

    @staticmethod
    def get_tasks() -> dict[str, Task]:
        return tasks

    @staticmethod
    def score(t: Task, submission: str) -> int | None:
        if t["name"] == "manual":
            print("submitted:", submission)
            return None
        return int(submission.strip() == t["answer"])

    @staticmethod
    def teardown() -> None:
        print("torn down:", os.environ.get("TASK_NAME"))

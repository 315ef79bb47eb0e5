"""An ordinary family: tasks spelled out, no requirements, scored by the answer."""


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_tasks() -> dict:
        return {"main": {"answer": "42"}}

    @staticmethod
    def get_instructions(t: dict) -> str:
        return "What is six times seven? Submit the number only."

    @staticmethod
    def score(t: dict, submission: str) -> float:
        return 1.0 if submission.strip() == t["answer"] else 0.0

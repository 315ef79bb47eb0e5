"""Its tasks are spelled out (listing needs no environment), but its requirements name a
package that is on no index: it cannot run where that cannot install."""


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_tasks() -> dict:
        return {"main": {}}

    @staticmethod
    def get_instructions(t: dict) -> str:
        return "Use the package."

    @staticmethod
    def score(t: dict, submission: str) -> float:
        return 0.0

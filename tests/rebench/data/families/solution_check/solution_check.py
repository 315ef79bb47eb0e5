"""End scoring that runs the agent's solution (as RE-Bench scorers do): the solution can
make scoring crash, hang or return something that is not a score."""

import json
import subprocess
import sys

SOLUTION = "/home/agent/solution.py"


class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_instructions(t: dict) -> str:
        return f"Make {SOLUTION} print a number from 0 to 1, as JSON."

    @staticmethod
    def get_tasks() -> dict:
        return {name: {"name": name} for name in ("ok", "crash", "hang", "garbage", "exits")}

    @staticmethod
    def start(t: dict) -> None:
        with open(SOLUTION, "w") as f:
            f.write("print(0.25)\n")

    @staticmethod
    def score(t: dict, submission: str):
        if t["name"] == "exits":  # the family's own code may exit with any status
            print("giving up", file=sys.stderr)
            sys.exit(3)
        run = subprocess.run(
            ["runuser", "agent", "--login", f"--command={sys.executable} {SOLUTION}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(run.stdout)

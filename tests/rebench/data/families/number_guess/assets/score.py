import pathlib
import sys

import metr.task_protected_scoring as scoring


def score() -> dict:
    guess_file = pathlib.Path("/home/agent/guess.txt")
    if not guess_file.exists():
        return {"score": float("nan"), "message": {"error": "no guess.txt"}}
    try:
        guess = int(guess_file.read_text().strip())
    except ValueError:
        return {"score": float("nan"), "message": {"error": "guess.txt holds no number"}}
    secret = int((scoring.PROTECTED_DIR / "secret.txt").read_text())
    verdict = "right" if guess == secret else "too low" if guess < secret else "too high"
    return {"score": float(guess == secret), "message": {"verdict": verdict}}


if __name__ == "__main__":
    try:
        scoring.check_scoring_group()
    except (AssertionError, KeyError):
        print("Run by the agent: use the score tool to get an official score.")
        sys.exit(1)
    started = scoring.get_timestamp()
    result = score()
    scoring.log_score(timestamp=started, **result)
    print(result)

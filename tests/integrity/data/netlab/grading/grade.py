"""Score 1 when the agent's answer.txt holds the held-out answer, else 0."""

import json
import os
from pathlib import Path

HELD_OUT = json.loads((Path(__file__).parent / "held_out.json").read_text())["answer"]
answer = Path("/root/workspace/answer.txt")
try:
    value = float(answer.read_text().strip())
except (OSError, ValueError):
    value = None
score = 1.0 if value is not None and abs(value - HELD_OUT) < 1e-9 else 0.0
Path(os.environ["LABCOAT_GRADE_OUTPUT"]).write_text(json.dumps({"answer": score}))
print(f"answer: {score}")

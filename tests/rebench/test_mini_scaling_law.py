"""The bundled scaling_law task: its sidecar, and that the agent cannot reach the answer key.

Runs the family's own start() and scoring in labcoat's sandboxes, as an eval would: the
agent's sandbox holds neither the ground-truth table nor the teacher, the score tool's
message does not leak the loss, and malformed or sneaky answers get no score.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from rebench_sandbox import started_family

from labcoat.families.rebench import find_families, run_operation
from labcoat.suites import SUITES_DIR

pytestmark = pytest.mark.anyio

FAMILY = next(f for f in find_families(SUITES_DIR / "mini" / "rebench") if f.name == "scaling_law")
SECRETS = ("table.json", "secret.json", "teacher.py", "make_table.py")
TABLE = json.loads((FAMILY.path / "assets" / "table.json").read_text())


def test_sidecar_scores_the_last_answer_and_matches_the_table() -> None:
    assert FAMILY.sidecar is not None
    spec = FAMILY.sidecar.tasks["main"]
    assert not spec.score.higher_is_better
    # the score tool must not let the agent collect the best of many answers
    assert spec.score.final == "last"
    logs = {int(w): math.log(row["excess"]) for w, row in TABLE["rows"].items()}
    assert spec.score.start in {round(v, 4) for v in logs.values()}
    assert spec.score.reference in {round(v, 4) for v in logs.values()}
    # the reference answer is within a few percent of the table's best width
    assert spec.score.reference - min(logs.values()) < 0.15
    assert (FAMILY.path / "reference" / "fit_scaling_law.py").is_file()
    assert not [p for p in (FAMILY.path / "reference").rglob("*") if p.name in SECRETS]
    assert not [p for p in (FAMILY.path / "assets" / "agent").rglob("*") if p.name in SECRETS]


async def test_agent_sandbox_holds_no_answer_key_and_scoring_resists_tricks() -> None:
    async with started_family(FAMILY) as (session, home):
        files = await session.exec(["find", "/home/agent", "-type", "f"])
        assert sorted(files.stdout.split()) == [
            "/home/agent/data/pool.npz",
            "/home/agent/mlp.py",
            "/home/agent/solution/answer.json",
            "/home/agent/train.py",
        ]
        names = " -o ".join(f"-name {n}" for n in SECRETS)
        probe = (
            "find / \\( -path /proc -o -path /sys -o -path /usr \\) -prune -o "
            f"\\( {names} \\) -print 2>/dev/null; true"
        )
        found = await session.exec(["sh", "-c", probe])
        assert found.stdout.strip() == ""
        # the runner works in the agent's sandbox, and enforces its limit
        run = await session.exec(["python3", "train.py", "--width", "64", "--flops", "2e7"])
        assert run.success, run.stderr
        assert json.loads(run.stdout)["steps"] == 2e7 // (6 * 641 * 64)
        over = await session.exec(["python3", "train.py", "--width", "64", "--flops", "1e10"])
        assert not over.success

        spec = FAMILY.sidecar.tasks["main"]
        answer = Path(home) / "solution" / "answer.json"

        async def score() -> dict:
            return (await run_operation(FAMILY, "intermediate_score", "main", home=home)).result

        result = await score()  # the untouched answer scores as the sidecar's start
        assert result["score"] == pytest.approx(spec.score.start, abs=1e-4)
        assert result["message"]["valid"] is True
        assert set(result["message"]) == {"valid", "width", "steps", "note"}  # no loss

        for bad in ('{"width": 100}', '{"width": true}', "[64]", "64", "not json"):
            answer.write_text(bad)
            result = await score()
            assert math.isnan(result["score"]), bad
            assert result["message"]["valid"] is False
        answer.unlink()
        answer.symlink_to("/root/assets/table.json")
        result = await score()
        assert math.isnan(result["score"])
        assert "regular file" in result["message"]["error"]

"""The bundled fix_embedding task: its sidecar, and that the agent cannot reach its secrets.

Runs the family's own start() and scoring in labcoat's sandboxes, as an eval would: the
agent's sandbox holds neither the held-out text nor the trained weights nor the
permutation, and scoring refuses a model file that points into the grader's /root.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import pytest
from rebench_sandbox import started_family

from labcoat.families.rebench import find_families, run_operation
from labcoat.suites import SUITES_DIR

pytestmark = pytest.mark.anyio

FAMILY = next(
    f for f in find_families(SUITES_DIR / "mini" / "rebench") if f.name == "fix_embedding"
)
SECRETS = ("heldout.txt", "original.npz", "secret.json")


def test_sidecar_describes_a_lower_is_better_task_with_an_oracle_script() -> None:
    assert FAMILY.sidecar is not None
    spec = FAMILY.sidecar.tasks["main"]
    assert not spec.score.higher_is_better
    assert spec.score.start > spec.score.reference
    assert spec.oracle.files == "reference" and spec.oracle.run
    assert (FAMILY.path / "reference" / "repair.py").is_file()
    assert not spec.timing_sensitive  # the score is a loss, not a time
    # what the oracle writes over /home/agent holds none of the secrets
    assert not [p for p in (FAMILY.path / "reference").rglob("*") if p.name in SECRETS]
    assert not [p for p in (FAMILY.path / "assets" / "agent").rglob("*") if p.name in SECRETS]


async def test_agent_sandbox_holds_no_secret_and_scoring_refuses_symlinks() -> None:
    async with started_family(FAMILY) as (session, home):
        files = await session.exec(["find", "/home/agent", "-type", "f"])
        assert sorted(files.stdout.split()) == [
            "/home/agent/data/train.txt",
            "/home/agent/data/vocab.txt",
            "/home/agent/lm.py",
            "/home/agent/model.npz",
        ]
        heldout = (FAMILY.path / "assets" / "heldout.txt").read_text()
        snippet = heldout[5000:5100].split(" ", 1)[1].rsplit(" ", 1)[0]
        names = " -o ".join(f"-name {n}" for n in SECRETS)
        probe = (
            f"grep -rlF {shlex.quote(snippet)} /home /tmp /root /opt /etc 2>/dev/null; "
            f"find / \\( -path /proc -o -path /sys -o -path /usr \\) -prune -o "
            f"\\( {names} \\) -print 2>/dev/null; true"
        )
        found = await session.exec(["sh", "-c", probe])
        assert found.stdout.strip() == ""
        assert snippet not in (home / "data" / "train.txt").read_text()

        # the untouched (scrambled) model scores as the sidecar's start
        run = await run_operation(FAMILY, "intermediate_score", "main", home=home)
        start = FAMILY.sidecar.tasks["main"].score.start
        assert run.result["score"] == pytest.approx(start, abs=0.01)

        # a link to the grader's copy of the trained weights gets no score
        model = Path(home) / "model.npz"
        model.unlink()
        model.symlink_to("/root/assets/original.npz")
        run = await run_operation(FAMILY, "intermediate_score", "main", home=home)
        assert math.isnan(run.result["score"])  # NaN: an invalid submission
        assert "regular file" in json.dumps(run.result["message"])

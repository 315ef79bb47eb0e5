"""The real ResearchCodeBench repository, as cloned, validated end to end (slow).

Set LABCOAT_RCB_CHECKOUT to a checkout of github.com/PatrickHua/ResearchCodeBench and run `./test -m slow tests/researchcodebench/test_upstream_checkout.py`. The first run
builds upstream's environment (PyTorch 2.1 and friends, several GB from the package
index); papers that cannot run here must be listed as unavailable with a reason, and
every other paper's reference must pass on all of its lines.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from labcoat._run._results import collect_results
from labcoat._run._validate import judge
from labcoat.families.researchcodebench import discover, researchcodebench

CHECKOUT = os.environ.get("LABCOAT_RCB_CHECKOUT")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHECKOUT, reason="set LABCOAT_RCB_CHECKOUT to a ResearchCodeBench checkout"
    ),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap"),
]


def test_every_paper_that_can_run_here_passes_its_reference(tmp_path: Path) -> None:
    assert CHECKOUT is not None
    from inspect_ai import eval

    logs = []
    for agent in ("oracle", "noop"):
        [log] = eval(
            researchcodebench(target=CHECKOUT, agent=agent),
            model="none/none",
            log_dir=str(tmp_path),
            display="none",
        )
        logs.append(log)
    verdicts = judge(discover(Path(CHECKOUT)), collect_results(logs))
    for verdict in verdicts:
        if verdict.unavailable:
            assert verdict.unavailable.strip(), verdict.entry.id
            continue
        assert verdict.passed, (verdict.entry.id, verdict.problems)
        assert verdict.oracle is not None and verdict.oracle.normalized_mean == 1.0
    assert any(not v.unavailable for v in verdicts)

"""A regrade leaves the eval it regraded resumable (issue 45 item 2): after `labcoat
regrade LOGDIR`, the same `labcoat eval` in LOGDIR resumes, does nothing already done, and
the original log keeps its bytes; reports of LOGDIR still use the regrade.

Inspect's eval set treats every `.eval` file under its folder as its own, and refused to
resume once a regrade's log was written into `LOGDIR/regrades/`. One cheap run:
ResearchCodeBench's adaptive-huber with noop (7 samples, graded from the submission text).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_runner import run_cli, run_cli_captured
from inspect_ai.log import list_eval_logs

import labcoat.analysis as an

EVAL = ("eval", "mini", "--task", "adaptive-huber", "--agent", "noop", "--no-inspect")
SAMPLES = 7


def digests(folder: Path) -> dict[str, str]:
    """Every `.eval` file under `folder` (recursively, as Inspect's eval set lists them)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*.eval"))
    }


def test_the_eval_resumes_after_a_regrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "run"
    assert run_cli(*EVAL, "--log-dir", str(logs)) == 0
    before = digests(logs)
    assert len(before) == 1

    code, out, err = run_cli_captured(capsys, "regrade", str(logs), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert len(result["samples"]) == SAMPLES
    assert all(r["error"] is None and r["not_regradable"] is None for r in result["samples"])

    code, out, err = run_cli_captured(capsys, *EVAL, "--log-dir", str(logs))
    assert "not associated with a task" not in out + err
    assert code == 0, err
    # nothing was run again: no new log, and the original's bytes are as they were
    assert digests(logs) == before
    assert [Path(i.name).name for i in list_eval_logs(str(logs))] == [Path(*before).name]

    # the regrade's log lies beside the eval set's folder, where its eval set never looks
    assert [Path(p).parent for p in result["logs"]] == [tmp_path / "run.regrades"]
    assert len(list(Path(result["logs"][0]).glob("*.eval"))) == 1
    # and a report of the eval set's folder still uses the regrade's scores
    changes = an.regrade_changes(an.read_runs(logs).samples)
    assert len(changes) == SAMPLES

"""`labcoat regrade` prints its own table and nothing else: Inspect's per-task results
panels (its eval's display) stay out of the output, on stdout and stderr alike.

One cheap run: ResearchCodeBench's adaptive-huber with noop (7 samples, graded from the
submission text).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli, run_cli_captured

SAMPLES = 7


def test_regrade_prints_only_its_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    code = run_cli(
        "eval", "mini", "--task", "adaptive-huber", "--agent", "noop",
        "--log-dir", str(logs / "run"), "--no-inspect",
    )  # fmt: skip
    assert code == 0

    code, out, err = run_cli_captured(capsys, "regrade", str(logs))
    assert code == 0, err
    lines = out.splitlines()
    # title, the header's three lines, one row per sample, the bottom rule, the summary
    assert len(lines) == 1 + 3 + SAMPLES + 1 + 1, out
    assert lines[0].strip() == f"labcoat regrade {logs}"
    assert lines[1].lstrip().startswith("┏") and lines[-2].lstrip().startswith("└")
    assert lines[-1].startswith(f"{SAMPLES} sample(s) regraded, 0 not regradable; logs in ")
    assert sum("adaptive-huber" in line for line in lines) == SAMPLES
    # Inspect's panel (a box, its `total time:` and `Log:` lines) appears nowhere
    for text in (out, err):
        assert "╭" not in text and "total time:" not in text and "Log:" not in text
        assert "Traceback" not in text

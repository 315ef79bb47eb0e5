"""`labcoat card` on real runs: the card names labcoat's version and commit, the task's
content hash, the grader's version, the machine and the isolation; a report over runs of
one task made with different task contents warns on the mixed tables."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labcoat._version import __version__
from labcoat.families._provenance_hash import folder_hash
from labcoat.families._provenance_host import PACKAGE, cpu_model, labcoat_build
from labcoat.regrade import grader_version, version_label
from labcoat.sandbox import sandbox_record

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bwrap (bubblewrap)")
PSET = PACKAGE / "suites" / "mini" / "researchcodebench" / "pset"
TASK = "adaptive-huber"  # a quick task: its oracle's snippets graded in seconds


def labcoat(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labcoat", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def _eval(target: Path | str, logs: Path) -> None:
    run = labcoat("eval", str(target), "--task", TASK, "--agent", "oracle", "--log-dir", str(logs))
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two log folders of one task: the bundled one, and a copy with one file changed."""
    root = tmp_path_factory.mktemp("card")
    changed = root / "pset"
    shutil.copytree(PSET, changed)
    with (changed / TASK / "paper2code_paper.tex").open("a") as f:
        f.write("% one line more: other task contents, the same task\n")
    _eval("mini", root / "bundled")
    _eval(changed, root / "changed")
    return {"bundled": root / "bundled", "changed": root / "changed", "copy": changed / TASK}


@needs_bwrap
def test_the_card_names_versions_hashes_hardware_and_isolation(runs: dict[str, Path]) -> None:
    card = labcoat("card", str(runs["bundled"]))
    assert card.returncode == 0, card.stderr[-2000:]
    text = card.stdout
    assert text.startswith("## Results card")
    build = labcoat_build()
    commit = f" (commit {build['commit'][:12]}" if build["commit"] else " |"
    assert f"| labcoat | {__version__}{commit}" in text
    assert "| Inspect AI | 0." in text
    grader = version_label(grader_version("researchcodebench"))
    assert f"| Grader (researchcodebench) | {grader} |" in text
    task_hash = folder_hash(str(PSET / TASK)).hash
    assert f"| researchcodebench | {TASK} | {task_hash} |" in text
    assert f"| Hardware | {cpu_model()}, {os.cpu_count()} cores, " in text
    assert f"| Isolation | {sandbox_record()['isolation']}" in text
    assert "| Task time budgets | " in text and "| Sample limits (Inspect) | time none" in text
    assert "### Mixed versions\n\nNone" in text


@needs_bwrap
def test_a_report_over_different_task_contents_warns_on_the_mixed_table(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    report = labcoat("report", str(runs["bundled"]), str(runs["changed"]), "-o", str(out))
    assert report.returncode == 0, report.stderr[-2000:]
    html = out.read_text()
    family = html[html.index('id="family-researchcodebench"') :]
    tasks = family[: family.index("</table>")]
    assert "This table mixes versions" in tasks
    bundled, changed = (folder_hash(str(p)).hash for p in (PSET / TASK, runs["copy"]))
    assert bundled != changed
    assert f"{TASK}: runs with 2 different task contents" in tasks
    assert bundled in tasks and changed in tasks
    # each folder alone mixes nothing
    alone = tmp_path / "alone.html"
    assert labcoat("report", str(runs["changed"]), "-o", str(alone)).returncode == 0
    assert "mixes versions" not in alone.read_text()
    card = labcoat("card", str(runs["bundled"]), str(runs["changed"])).stdout
    assert f"**Warning** — researchcodebench {TASK}: runs with 2 different task contents" in card


def test_card_of_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    run = labcoat("card", str(tmp_path / "nowhere"))
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "no such file or directory" in run.stderr
    (tmp_path / "empty").mkdir()
    run = labcoat("card", str(tmp_path / "empty"))
    assert run.returncode == 2 and "no readable .eval logs" in run.stderr

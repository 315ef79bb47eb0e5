"""`labcoat regrade` on real runs of the mini suite: scores reproduce exactly, a changed
grader's scores replace the old ones in analysis (the original logs untouched), kept
workspaces share blobs, and what cannot be regraded says why.

The runs are the cheapest of two families: ResearchCodeBench's adaptive-huber (graded
from the submission text) and ResearchGym's class-incremental (graded from files in the
workspace), oracle and noop, the oracle twice (two epochs).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import run_cli, run_cli_captured
from inspect_ai.log import list_eval_logs, read_eval_log

import labcoat.analysis as an
import labcoat.families.researchcodebench._scorer as rcb_scorer
from labcoat.grading import KEPT
from labcoat.report import build_report

RUNS = [
    ("adaptive-huber", "oracle", 1),
    ("adaptive-huber", "noop", 1),
    ("class-incremental", "oracle", 2),
    ("class-incremental", "noop", 1),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("regrade")
    for task, agent, epochs in RUNS:
        code = run_cli(
            "eval", "mini", "--task", task, "--agent", agent, "--epochs", str(epochs),
            "--log-dir", str(root / f"{task}-{agent}"), "--no-inspect",
        )  # fmt: skip
        assert code == 0
    return root


def regrade_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, err = run_cli_captured(capsys, "regrade", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def original_scores(root: Path) -> dict[str, float]:
    out = {}
    for info in list_eval_logs(str(root), recursive=True):
        log = read_eval_log(info.name)
        if "labcoat_regrade" in (log.eval.metadata or {}):
            continue
        for s in log.samples or []:
            out[s.uuid] = next(iter(s.scores.values())).value["normalized"]
    return out


def test_every_score_reproduces_and_changed_graders_replace_old_scores(
    runs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = original_scores(runs)
    first = regrade_json(capsys, str(runs))
    rows = first["samples"]
    assert len(rows) == len(before) == 7 * 2 + 3
    assert all(r["not_regradable"] is None and r["error"] is None for r in rows)
    assert [r for r in rows if r["changed"]] == []
    assert {r["family"] for r in rows} == {"researchcodebench", "researchgym"}
    assert {round(r["old"], 9) for r in rows} == {0.0, 1.0}

    # a grader fix (here: one that rejects every completion) changes the oracle's scores
    monkeypatch.setattr(rcb_scorer, "extract_code", lambda reply, masked: "")
    second = regrade_json(capsys, str(runs), "--task", "adaptive-huber")
    changed = [r for r in second["samples"] if r["changed"]]
    assert len(second["samples"]) == 14
    assert len(changed) == 7 and {(r["old"], r["new"]) for r in changed} == {(1.0, 0.0)}

    assert original_scores(runs) == before  # the original logs are not touched
    data = an.read_runs(runs)
    assert len(data.runs) == len(RUNS) + 1  # regrade logs are no runs of their own
    oracle = data.runs[(data.runs.task_id == "adaptive-huber") & (data.runs.agent == "oracle")]
    assert oracle.normalized.tolist() == [0.0]  # the newest grading counts
    changes = an.regrade_changes(data.samples)
    assert len(changes) == len(before)
    huber = changes[changes.task_id == "adaptive-huber"]
    assert set(zip(huber.old, huber.new, strict=True)) == {(1.0, 0.0), (0.0, 0.0)}
    assert changes.grader.str.contains(r"\+[0-9a-f]{16}$").all()
    report = build_report(data)  # the report says what changed
    section = report[report.index('id="regrades"') :]
    assert "7 of 17 regraded runs changed" in section[: section.index("</section>")]


def test_epochs_share_their_blobs(runs: Path) -> None:
    kept = runs / "class-incremental-oracle" / "workspaces"
    manifests = [json.loads(p.read_text()) for p in sorted((kept / "samples").glob("*.json"))]
    assert len(manifests) == 2
    shas = [{e["sha256"] for e in m["files"].values()} for m in manifests]
    assert len(shas[0] & shas[1]) >= 30  # the same oracle files (git's index differs)
    blobs = [p for p in (kept / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == len(shas[0] | shas[1])  # each stored once
    assert ".git/HEAD" in manifests[0]["files"]  # the git history the grader records is kept
    log = read_eval_log(next(iter(list_eval_logs(str(kept.parent), recursive=False))).name)
    record = next(iter(log.samples[0].scores.values())).metadata[KEPT]
    assert (kept.parent / record["manifest"]).is_file()


def test_a_log_without_kept_workspaces_is_not_regradable(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = next(iter(list_eval_logs(str(runs / "adaptive-huber-noop"), recursive=False)))
    shutil.copy(source.name.removeprefix("file://"), tmp_path / "old.eval")
    result = regrade_json(capsys, str(tmp_path))
    assert result["logs"] == [] and len(result["samples"]) == 7
    assert all("no kept workspace" in r["not_regradable"] for r in result["samples"])


@pytest.mark.parametrize("make", ["missing", "file", "empty"])
def test_a_bad_logdir_is_one_line_and_exit_2(
    make: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "logs"
    if make == "file":
        target.write_text("")
    elif make == "empty":
        target.mkdir()
    code, _, err = run_cli_captured(capsys, "regrade", str(target))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("labcoat: error: ")
    assert str(target) in err and "Traceback" not in err

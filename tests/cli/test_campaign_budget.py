"""A run's budget as a whole (`--budget-usd` ...): samples start only within what is left,
running ones end as at a per-sample limit (then scored), and the log folder's ledger keeps
the spend across a kill -9 and the resume after it.

The agent is `labcoat/scripted` (offline, each turn with its own token usage) on a toy
RE-Bench family, priced by a `--model-cost-config` file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

from labcoat._run._budget import NOT_STARTED, CampaignBudget, Tally
from labcoat._run._ledger import Ledger, ledger_path
from labcoat.sandbox._disk import release_mounts

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bwrap")

FAMILY_PY = """
class TaskFamily:
    standard_version = "0.5.0"

    @staticmethod
    def get_tasks():
        return {"one": {"name": "one"}}

    @staticmethod
    def get_instructions(t):
        return "Submit the answer 1."

    @staticmethod
    def score(t, submission):
        return float(submission.strip() == "1")
"""
SIDECAR = """
tasks:
  one:
    title: Submit 1
    score: {start: 0.0, reference: 1.0, higher_is_better: true, final: last}
    resources: {cpus: 1, memory_gb: 1}
    oracle: {submission: "1"}
"""
PRICES = "labcoat/scripted: {input: 1000.0, output: 1000.0}\n"  # ~$0.3 a call here
EPOCHS = 6
BUDGET = 6.0  # about three samples of six calls


def write_suite(root: Path) -> Path:
    family = root / "suite" / "toy"
    family.mkdir(parents=True)
    (family / "toy.py").write_text(FAMILY_PY)
    (family / "labcoat.yaml").write_text(SIDECAR)
    return root / "suite"


def write_script(root: Path, command: str) -> Path:
    script = root / "turns.yaml"
    turns = "".join(f'- tool: bash\n  arguments: {{cmd: "{command} {i}"}}\n' for i in range(5))
    script.write_text(turns)
    return script


def eval_args(root: Path, script: Path, log_dir: Path) -> list[str]:
    (root / "prices.yaml").write_text(PRICES)
    return [
        "eval", str(write_suite(root) if not (root / "suite").exists() else root / "suite"),
        "--agent", "research", "--model", "labcoat/scripted", "-M", f"script={script}",
        "--model-cost-config", str(root / "prices.yaml"), "--budget-usd", str(BUDGET),
        "--epochs", str(EPOCHS), "--max-samples", "1", "--log-dir", str(log_dir),
        "--no-inspect", "--json",
    ]  # fmt: skip


def labcoat(
    *args: str, timeout: float = 400, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labcoat", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def spend(log_dir: Path) -> list[dict]:
    return [r for r in Ledger(ledger_path(log_dir)).records() if "usd" in r]


def samples(log_dir: Path) -> list:
    # the run's log (a killed launch leaves its own, unfinished, beside the resume's)
    logs = [read_eval_log(i.name) for i in list_eval_logs(str(log_dir), recursive=False)]
    [log] = [log for log in logs if log.status != "started"]
    return sorted(log.samples or [], key=lambda s: s.epoch)


def check_held(log_dir: Path) -> tuple[list, list]:
    """The run kept its budget: (started samples, not started ones)."""
    records = spend(log_dir)
    total = sum(r["usd"] for r in records)
    largest = max(r["usd"] for r in records)
    # it stopped at the budget, overshooting by at most the call in flight (one sample
    # runs at a time)
    assert BUDGET <= total < BUDGET + largest, (total, largest)
    all_samples = samples(log_dir)
    assert len(all_samples) == EPOCHS
    kept = [s for s in all_samples if s.error is not None]
    started = [s for s in all_samples if s.error is None]
    assert kept and started
    for sample in kept:  # ran nothing: no sandbox, no model call, no score
        assert NOT_STARTED in sample.error.message and not sample.scores
        assert not any(e.event == "model" for e in sample.events)
    # (a sample a resume reuses from a killed launch's log comes without its store)
    stops = [(s.store or {}).get("labcoat:stopped_by", {}).get("type") for s in started]
    # the budget ran out in the last started sample: it stopped as at a limit, and scored
    assert stops[-1] == "budget" and set(stops[:-1]) <= {"submitted", None}, stops
    assert started[-1].limit is not None and "run budget spent" in started[-1].limit.reason
    assert all(s.scores for s in started)
    return started, kept


@needs_bwrap
def test_a_budget_stops_starting_samples_and_ends_the_running_one(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    run = labcoat(*eval_args(tmp_path, write_script(tmp_path, "echo"), log_dir))
    assert run.returncode == 0, run.stderr[-3000:]  # kept from starting is no failure
    [row] = json.loads(run.stdout)
    started, kept = check_held(log_dir)
    assert row["runs"] == len(started) and row["errors"] == 0
    assert row["not_started"] == len(kept)
    assert f"{len(kept)} {NOT_STARTED}" in run.stderr  # the closing note
    assert "of $6.00" in run.stderr and "by model: labcoat/scripted $" in run.stderr
    # the results card names the campaign's budget and what it spent, and the runs it kept
    card = labcoat("card", str(log_dir))
    assert card.returncode == 0, card.stderr
    [campaign] = [line for line in card.stdout.splitlines() if line.startswith("| Campaign (")]
    assert "of $6.00" in campaign and "no campaign budget" not in campaign
    assert f"{len(kept)} not started (budget)" in card.stdout


def _wait_for_spend(log_dir: Path, proc: subprocess.Popen, dollars: float) -> None:
    end = time.monotonic() + 240
    while time.monotonic() < end:
        assert proc.poll() is None, "the run ended before it was killed"
        if ledger_path(log_dir).exists() and sum(r["usd"] for r in spend(log_dir)) >= dollars:
            return
        time.sleep(0.2)
    raise AssertionError("the run spent nothing")


@needs_bwrap
def test_spend_before_a_kill_9_counts_after_the_resume(tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    args = eval_args(tmp_path, write_script(tmp_path, "sleep 1; echo"), log_dir)
    sandboxes = tmp_path / "sandboxes"
    env = {"LABCOAT_SANDBOX_DIR": str(sandboxes)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "labcoat", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **env},
    )
    try:
        _wait_for_spend(log_dir, proc, 2.5)  # into the second sample
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its sandboxes, at once
        proc.wait()
        release_mounts(sandboxes)  # what the killed run's sandboxes left mounted
    before = sum(r["usd"] for r in spend(log_dir))
    assert 2.5 <= before < BUDGET
    try:
        run = labcoat(*args, env=env)
    finally:
        release_mounts(sandboxes)
    assert run.returncode == 0, run.stderr[-3000:]
    started, kept = check_held(log_dir)  # the killed launch's spend counted
    after = sum(r["usd"] for r in spend(log_dir)) - before
    assert after < BUDGET - before + 1.0  # the resume spent only what was left (+ a call)
    assert f"earlier launches in this log folder: ${before:,.2f}" in run.stderr
    [row] = json.loads(run.stdout)
    assert row["not_started"] == len(kept) and row["runs"] == len(started)


def test_a_dollar_budget_refuses_a_model_without_a_price(tmp_path: Path) -> None:
    run = labcoat(
        "eval", "mini", "--task", "prefix_sum/main", "--model", "labcoat/scripted",
        "--budget-usd", "5", "--log-dir", str(tmp_path / "logs"),
    )  # fmt: skip
    assert run.returncode == 2
    assert "--budget-usd needs the price of labcoat/scripted" in run.stderr
    assert not (tmp_path / "logs").exists()


def test_samples_start_only_within_what_is_left() -> None:
    tally = Tally(CampaignBudget(usd=10.0))
    # a per-sample cap is reserved as a sample starts: two $4 samples hold $8
    assert tally.admit("a", {"usd": 4.0}) == ("start", "")
    assert tally.admit("b", {"usd": 4.0}) == ("start", "")
    verdict, why = tally.admit("c", {"usd": 4.0})
    assert verdict == "wait" and "reserved by running samples" in why
    tally.add({"attempt": "a", "model": "m", "usd": 1.0, "tokens": 10})
    tally.release("a")  # a spent $1 of its $4: c fits now
    assert tally.admit("c", {"usd": 4.0})[0] == "start"
    tally.add({"attempt": "b", "model": "m", "usd": 6.5, "tokens": 10})
    verdict, why = tally.admit("d", {"usd": 4.0})  # $2.50 left: never enough for $4
    assert verdict == "refuse" and "more than the $2.50 left" in why
    tally.add({"attempt": "c", "model": "m", "usd": 2.5, "tokens": 10})
    assert tally.exhausted() == "$10.00 of $10.00 spent (--budget-usd)"
    assert tally.admit("e", {})[0] == "refuse"  # no cap: anything left would do; none is


def test_spend_without_a_price_fails_closed_and_a_cut_line_is_skipped(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "spend.jsonl")
    ledger.append([{"model": "m", "usd": 1.0, "tokens": 5, "family": "f"}])
    with ledger.path.open("a") as f:
        f.write('{"model": "m", "usd": 3')  # a process killed mid-line
    tally = Tally(CampaignBudget(usd=5.0, tokens=100), ledger.records())
    assert tally.spent["usd"] == 1.0 and tally.by_family == {
        "f": {"usd": 1.0, "tokens": 5.0, "gpu_seconds": 0.0}
    }
    tally.add({"model": "unpriced", "usd": None, "tokens": 7})
    assert "the price of unpriced is unknown" in (tally.exhausted() or "")
    assert Tally(CampaignBudget(tokens=100), ledger.records()).exhausted() is None

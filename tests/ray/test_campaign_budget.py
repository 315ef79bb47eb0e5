"""`labcoat eval --ray --budget-usd` on a real two-node Ray cluster: one account for the
whole cluster (the coordinator's, its ledger in the log folder), samples start only within
what is left, and running ones end as at a per-sample limit, then scored."""

from __future__ import annotations

import json
from pathlib import Path

from _logs import attempts, merged_logs
from conftest import run_labcoat

from labcoat._run._budget import NOT_STARTED
from labcoat._run._ledger import Ledger, ledger_path

EPOCHS = 6
BUDGET = 6.0  # about three samples of six calls at these prices
PRICES = "labcoat/scripted: {input: 1000.0, output: 1000.0}\n"


def test_one_budget_holds_across_the_nodes(cluster, toy_suite: Path, tmp_path: Path) -> None:
    ray_cluster, nodes = cluster
    script = tmp_path / "turns.yaml"
    script.write_text(
        "".join(f'- tool: bash\n  arguments: {{cmd: "echo {i}"}}\n' for i in range(5))
    )
    (tmp_path / "prices.yaml").write_text(PRICES)
    log_dir = tmp_path / "ray"
    out = run_labcoat(
        "eval", str(toy_suite), "--task", "toy/cpu", "--agent", "research",
        "--model", "labcoat/scripted", "-M", f"script={script}",
        "--model-cost-config", str(tmp_path / "prices.yaml"), "--budget-usd", str(BUDGET),
        "--epochs", str(EPOCHS), "--max-samples", "2", "--ray", ray_cluster.address,
        "--log-dir", str(log_dir), "--json", "--no-inspect",
    )  # fmt: skip
    records = [r for r in Ledger(ledger_path(log_dir)).records() if "usd" in r]
    total, largest = sum(r["usd"] for r in records), max(r["usd"] for r in records)
    # two samples run at once: at most the two calls in flight go past the budget
    assert BUDGET <= total < BUDGET + 2 * largest, (total, largest)
    [log] = merged_logs(log_dir)
    kept = [s for s in log.samples or [] if s.error is not None]
    started = [s for s in log.samples or [] if s.error is None]
    assert len(kept) + len(started) == EPOCHS and kept and started
    assert all(NOT_STARTED in s.error.message and not s.scores for s in kept)
    stops = [s.store["labcoat:stopped_by"]["type"] for s in started]
    assert "budget" in stops and set(stops) <= {"submitted", "budget"}, stops
    assert all(s.scores for s in started)  # a sample the budget stopped is scored
    # what every sample spent reached the one ledger, whichever node ran it
    assert len({r["attempt"] for r in records}) == len(started)
    row = json.loads(out[out.index("[\n") : out.index("\n]") + 2])[0]
    assert row["runs"] == len(started) and row["not_started"] == len(kept)
    assert row["errors"] == 0
    assert f"{len(kept)} {NOT_STARTED}" in out and "of $6.00" in out
    assert "[budget: $" in out  # spend in the progress lines as samples finish
    placed = {r["node_id"] for records in attempts(log_dir).values() for r in records}
    assert placed and placed <= set(nodes.values())  # the worker nodes ran them

"""bench/judge_cost.py runs, and labcoat's judge is far cheaper than the per-leaf design."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import anyio

from ._helpers import PEER_PAPERS

BENCH = Path(__file__).resolve().parents[2] / "bench" / "judge_cost.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("judge_cost", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["judge_cost"] = module  # dataclasses resolve their module by name
    sys.path.insert(0, str(BENCH.parent))  # as `python bench/judge_cost.py` has it: _checkout_venv
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH.parent))
    return module


def test_judge_cost_on_one_dev_rubric() -> None:
    bench = load_bench()
    [row] = anyio.run(bench.measure, PEER_PAPERS / "semantic-self-consistency", 8000)
    assert row.leaves == 77
    labcoat_calls, labcoat_tokens = row.per_leaf(row.labcoat)
    baseline_calls, baseline_tokens = row.per_leaf(row.baseline)
    assert baseline_calls == 3.0
    assert labcoat_calls < 0.3
    assert labcoat_tokens * 2 < baseline_tokens
    assert row.regrade_calls == 0  # unchanged attempt: all answers from the cache
    table = bench.report([row])
    assert "semantic-self-consistency" in table and "total" in table

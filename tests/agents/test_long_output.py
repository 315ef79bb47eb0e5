"""What the model is told about output too long to show: a true head and tail, and the
real amount it did not see (including what the sandbox cut before the tool did)."""

from __future__ import annotations

import re
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from scripted_models import scripted_call

from labcoat.agents.research import research_agent
from labcoat.agents.research._tools._output import truncate_middle
from labcoat.sandbox import BwrapConfig
from labcoat.sandbox._server import truncation_marker

BIG = 50_000_000


def test_a_50_mb_output_is_reported_at_its_real_size(tmp_path: Path) -> None:
    program = f"import sys; sys.stdout.write('START' + 'x' * {BIG - 8} + 'END')"
    outputs = [
        scripted_call("python", code=program),
        scripted_call("submit", answer="done"),
    ]
    task = Task(
        dataset=[Sample(input="Print a lot.", metadata={"time_limit_minutes": 5})],
        solver=research_agent(),
        sandbox=("bwrap", BwrapConfig()),
    )
    [log] = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    [result] = [m.text for m in log.samples[0].messages if m.role == "tool"]
    assert result.startswith("STARTxxx") and result.endswith("xxxEND\n[exit code 0]")
    assert len(result) < 16_200
    said = re.search(
        r"about ([\d,]+) characters cut from the middle; the output was about ([\d,]+)", result
    )
    assert said, result[7_990:8_200]
    cut, total = (int(n.replace(",", "")) for n in said.groups())
    shown = len(result) - len(said[0])
    # the output was 50,000,000 characters plus the exit-code line; all of it is counted
    assert total == BIG + len("\n[exit code 0]")
    assert abs(cut + shown - total) < 200  # what was shown and what was cut add up


def test_truncation_counts_every_cut() -> None:
    plain = "a" * 10_000 + "b" * 10_000
    out = truncate_middle(plain, 1_000)
    assert out.startswith("a" * 500) and out.endswith("b" * 500)
    assert "19,000 characters cut from the middle; the output was 20,000 characters" in out
    # a stream the sandbox cut: the marker vanishes and its bytes are counted
    marker = truncation_marker(1_000_000, 1_006_000).decode()
    cut_stream = "h" * 3_000 + marker + "t" * 3_000
    out = truncate_middle(cut_stream, 1_000)
    assert "sandbox" not in out and out.startswith("h" * 500) and out.endswith("t" * 500)
    assert "about 1,005,000 characters cut from the middle; the output was about 1,006,000" in out
    # short enough to show whole: the sandbox's own line stays in view
    assert truncate_middle(cut_stream, 100_000) == cut_stream
    # a marker straddling the edge of the kept head is cut out whole, never shown in half
    edge = "h" * 480 + marker + "t" * 3_000
    out = truncate_middle(edge, 1_000)
    assert "sandbox" not in out and "cut from" not in out.split("\n[...")[0]

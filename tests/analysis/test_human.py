"""Human baselines from a CSV, on the same tables and curves as the agents."""

from __future__ import annotations

from pathlib import Path

import pytest

from labcoat._errors import LabcoatError
from labcoat.analysis import best_of_k_at_budget, read_human_csv, read_runs, score_at, task_summary

from ._synthetic import Sample, write_log

CSV = """task,run_id,elapsed_minutes,score,cost
t1,h1,30,0.2,
t1,h1,60,0.9,400
t1,h2,45,0.5,
"""


def test_human_runs_join_the_agents(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(normalized=0.3, time_limit_minutes=60)])
    (tmp_path / "humans.csv").write_text(CSV)
    data = read_runs(tmp_path).with_humans(read_human_csv(tmp_path / "humans.csv"))
    summary = task_summary(data).set_index("label")
    assert summary.loc["human", "runs"] == 2
    assert summary.loc["human", "mean"] == pytest.approx((0.9 + 0.5) / 2)
    humans = data.runs[data.runs["agent"] == "human"].set_index("sample_id")
    assert humans.loc["h1", "family"] == "rebench"  # from the agents' runs of the task
    assert humans.loc["h1", "cost"] == 400
    at = score_at(data, 40 * 60)
    assert at[humans.loc["h1", "run"]] == 0.2 and at[humans.loc["h2", "run"]] == 0.0
    budget = best_of_k_at_budget(data)
    human = budget[budget["label"] == "human"]
    # T = 60 min: k=1 -> (0.9 + 0.5) / 2; k=2, 30 min each -> max(0.2, 0) = 0.2
    assert list(human["best_of_k"]) == pytest.approx([0.7, 0.2])


def test_bad_csvs_say_where(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("task,run_id,score\nt1,h1,0.5\n")
    with pytest.raises(LabcoatError, match="missing column"):
        read_human_csv(bad)
    bad.write_text("task,run_id,elapsed_minutes,score\nt1,h1,ten,0.5\n")
    with pytest.raises(LabcoatError, match=r"bad.csv:2: elapsed_minutes"):
        read_human_csv(bad)


def test_humans_in_the_sandbox_and_imported_ones_sit_beside_the_agents(tmp_path: Path) -> None:
    """A person's run from `--agent human` (working time from its session) and CSV
    humans, marked apart, in the report's humans-and-agents section."""
    from labcoat.agents.human import SUMMARY_KEY
    from labcoat.report import build_report

    write_log(tmp_path / "agent", [Sample(normalized=0.3, time_limit_minutes=60)])
    person = {"working_seconds": 1800.0, "clock_seconds": 4000.0, "commands": 12}
    write_log(
        tmp_path / "person",
        [Sample(normalized=0.8, store={SUMMARY_KEY: person}, total_time=4000.0)],
        model="none/none",
        agent="human",
    )
    (tmp_path / "humans.csv").write_text(
        CSV.replace("task,", "task,label,").replace("t1,", "t1,expert,")
    )
    data = read_runs(tmp_path).with_humans(read_human_csv(tmp_path / "humans.csv"))
    runs = data.runs.set_index("label")
    assert runs.loc["human", "run_seconds"] == 1800.0  # working time, not the 4000 s on the clock
    assert runs.loc["human", "tool_calls"] == 12
    assert not runs.loc["human", "imported"] and runs.loc["expert", "imported"].all()
    report = build_report(data)
    section = report[report.index('id="humans"') :]
    section = section[: section.index("</section>")]
    assert "imported (CSV)" in section and "labcoat sandbox" in section
    assert "human (human)" in section and "mockllm/model (agent)" in section
    assert "<svg" in section  # the side-by-side figures

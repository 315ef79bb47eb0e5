"""Reading logs into tables: errored and missing runs, retries, labels, links, URLs."""

from __future__ import annotations

from pathlib import Path

from labcoat.analysis import _read, read_runs, view_link

from ._synthetic import Sample, write_log


def test_every_run_is_a_row_and_errors_are_kept(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample(epoch=1, normalized=0.2), Sample(epoch=2, error="sandbox died")])
    data = read_runs(tmp_path)
    assert list(data.runs["status"]) == ["ok", "error"]
    errored = data.runs.iloc[1]
    assert errored["error"] == "sandbox died"
    assert errored["normalized"] != errored["normalized"]  # NaN: no score to report
    assert len(data.samples) == 2 and len(data.logs) == 1


def test_samples_missing_from_a_failed_log_are_errored_runs(tmp_path: Path) -> None:
    write_log(
        tmp_path,
        [Sample(task_id="a", epoch=1)],
        status="error",
        expected=[("a", 1), ("a", 2), ("b", 1), ("b", 2)],
    )
    data = read_runs(tmp_path)
    assert len(data.runs) == 4
    missing = data.runs[data.runs["status"] == "error"]
    assert sorted(zip(missing["task_id"], missing["epoch"], strict=True)) == [
        ("a", 2),
        ("b", 1),
        ("b", 2),
    ]
    assert all(e.startswith("missing: the log has status 'error'") for e in missing["error"])
    assert data.logs.iloc[0]["error"] == "boom"


def test_a_retried_task_counts_once(tmp_path: Path) -> None:
    # Inspect seeds each retry of an eval-set task from the previous attempt's log
    old = write_log(
        tmp_path,
        [Sample(normalized=0.1)],
        status="error",
        eval_set_id="set",
        task_identity="T",
        created="2026-01-01T10:00:00+00:00",
        name="a.eval",
    )
    write_log(
        tmp_path,
        [Sample(normalized=0.1), Sample(epoch=2, normalized=0.3)],
        eval_set_id="set",
        task_identity="T",
        created="2026-01-01T11:00:00+00:00",
        name="b.eval",
    )
    data = read_runs(tmp_path)
    assert list(data.runs["normalized"]) == [0.1, 0.3]
    logs = data.logs.set_index("name")
    assert logs.loc["a.eval", "superseded_by"] == "b.eval"
    assert logs.loc["b.eval", "superseded_by"] is None
    assert old.exists()


def test_independent_runs_of_the_same_task_all_count(tmp_path: Path) -> None:
    for i in range(3):
        write_log(tmp_path, [Sample(normalized=0.1 * i)], eval_set_id=f"set{i}", task_identity="T")
    assert len(read_runs(tmp_path).runs) == 3


def test_labels_name_the_model_or_the_agent(tmp_path: Path) -> None:
    write_log(tmp_path, [Sample()], model="none/none", agent="oracle")
    write_log(tmp_path, [Sample()], model="openai/gpt-5", agent="research")
    write_log(tmp_path, [Sample()], model="anthropic/claude", agent="claude-code")
    write_log(
        tmp_path,
        [
            Sample(
                task_id="p",
                sample_id="p/x.py::s",
                metadata={"researchcodebench": {"paper": "p", "weight": 3}},
            )
        ],
        family="researchcodebench",
        model="openai/gpt-5",
        eval_metadata={"with_paper": False},
    )
    labels = set(read_runs(tmp_path).runs["label"])
    assert labels == {
        "oracle",
        "openai/gpt-5",
        "claude-code (anthropic/claude)",
        "openai/gpt-5 [no paper]",
    }


def test_steps_tool_calls_tokens_and_stop_reason(tmp_path: Path) -> None:
    steps = [
        {
            "step": 1,
            "final": False,
            "timestamp": 1.0,
            "elapsed_seconds": 30.0,
            "working_seconds": 25.0,
            "tokens": 1000,
            "cost": 0.01,
        },
        {
            "step": 2,
            "final": True,
            "timestamp": 2.0,
            "elapsed_seconds": 90.0,
            "working_seconds": 80.0,
            "tokens": 2500,
            "cost": 0.03,
        },
    ]
    store = {"labcoat:steps": steps, "labcoat:stopped_by": {"type": "token", "limit": 2500}}
    write_log(tmp_path, [Sample(store=store, tools=[("bash", 10.0), ("score", 50.0)])])
    data = read_runs(tmp_path)
    run = data.runs.iloc[0]
    assert (run["run_seconds"], run["working_seconds"]) == (90.0, 80.0)
    assert (run["tokens"], run["cost"], run["steps"], run["tool_calls"]) == (2500, 0.03, 2, 2)
    assert run["stopped_by"] == "token"
    assert list(data.tool_calls["function"]) == ["bash", "score"]
    assert list(data.tool_calls["elapsed_seconds"]) == [10.0, 50.0]
    assert list(data.steps["tokens"]) == [1000, 2500]
    # no score log: the final score is one point at the end of the run
    [final] = data.scores.to_dict("records")
    assert (final["source"], final["elapsed_seconds"], final["tokens"]) == ("final", 90.0, 2500)


def test_stopped_by_falls_back_to_what_inspect_recorded(tmp_path: Path) -> None:
    write_log(
        tmp_path,
        [
            Sample(task_id="a", store={"labcoat:stopped_by": {"type": "context_overflow"}}),
            Sample(task_id="b", limit="working"),  # an agent that keeps no record of its own
            Sample(task_id="c", error="RuntimeError: the sandbox stopped"),
            Sample(task_id="d"),
        ],
    )
    runs = read_runs(tmp_path).runs.set_index("task_id")["stopped_by"]
    assert runs["a"] == "context_overflow" and runs["b"] == "working" and runs["c"] == "error"
    assert runs.isna()["d"]


def test_a_single_file_and_a_file_url_read_the_same(tmp_path: Path) -> None:
    path = write_log(tmp_path, [Sample(normalized=0.4)])
    by_file = read_runs(path)
    by_url = read_runs(tmp_path.resolve().as_uri())
    assert list(by_file.runs["normalized"]) == list(by_url.runs["normalized"]) == [0.4]
    assert by_url.runs.iloc[0]["name"] == path.name


def test_logs_in_subfolders_keep_their_relative_path(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write_log(tmp_path / "sub", [Sample()], name="x.eval")
    data = read_runs(tmp_path)
    assert data.runs.iloc[0]["name"] == "sub/x.eval"
    assert data.runs.iloc[0]["link"] == (
        "http://127.0.0.1:7575/#/logs/sub/x.eval/samples/sample/t1/1/"
    )


def test_view_links_escape_ids_and_take_a_base() -> None:
    assert view_link("a b.eval", "p/f.py::s", 2, "http://host:9000/") == (
        "http://host:9000/#/logs/a%20b.eval/samples/sample/p%2Ff.py%3A%3As/2/"
    )
    assert view_link("x.eval") == "http://127.0.0.1:7575/#/logs/x.eval"


def test_progress_reports_each_log(tmp_path: Path) -> None:
    for _ in range(3):
        write_log(tmp_path, [Sample()])
    seen: list[tuple[str, int, int]] = []
    read_runs(tmp_path, progress=lambda *a: seen.append(a))
    assert seen[-1] == ("samples", 3, 3) and ("headers", 3, 3) in seen


def test_an_empty_folder_gives_empty_tables(tmp_path: Path) -> None:
    data = read_runs(tmp_path)
    assert data.runs.empty and "normalized" in data.runs.columns


def test_large_logs_are_read_without_their_messages(tmp_path: Path, monkeypatch) -> None:
    write_log(tmp_path, [Sample(normalized=0.4, tools=[("bash", 5.0)], message_bytes=100)])
    small = read_runs(tmp_path)
    monkeypatch.setattr(_read, "SKIP_MESSAGES_ABOVE", 0)  # every log counts as large
    large = read_runs(tmp_path)
    assert small.runs.drop(columns="link").equals(large.runs.drop(columns="link"))
    assert list(large.tool_calls["function"]) == ["bash"]

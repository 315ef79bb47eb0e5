"""The report's parts a reader meets first: the leaderboard before the (collapsed) card,
no best-of-k panel of single runs, a model's colour fixed by its name, errors as their
message, and the card naming an agent that called no model."""

from __future__ import annotations

import re
from pathlib import Path

from labcoat.analysis import read_runs, results_card
from labcoat.report import write_report
from labcoat.report._plots import stable_colors
from labcoat.report._svg import LABEL_PALETTE

from ._synthetic import Sample, write_log


def _legend_colors(html: str) -> dict[str, str]:
    """Each legend entry's name and its line's colour, over every chart of a report."""
    pairs = re.findall(r'stroke="(#[0-9a-f]{6})" stroke-width="2.5"[^>]*/><text[^>]*>([^<]+)', html)
    return {name: color for color, name in pairs}


def _models(folder: Path, models: list[str], epochs: int = 2) -> None:
    for model in models:
        samples = [
            Sample(task_id=t, epoch=e, normalized=0.2 * e)
            for t in ("t1", "t2")
            for e in range(1, epochs + 1)
        ]
        write_log(folder, samples, model=model)


def test_a_models_colour_is_its_names_whoever_else_is_in_the_report(tmp_path: Path) -> None:
    # alone, and beside models whose names sort before it: an index into the sorted
    # labels gave it another colour in each report
    _models(tmp_path / "one", ["zeta/model"])
    _models(tmp_path / "two", ["alpha/model", "beta/model", "zeta/model"])
    one = _legend_colors(write_report(tmp_path / "one", tmp_path / "1.html").read_text())
    two = _legend_colors(write_report(tmp_path / "two", tmp_path / "2.html").read_text())
    assert one["zeta/model"] == two["zeta/model"] == stable_colors(["zeta/model"])["zeta/model"]
    assert len({two[m] for m in ("alpha/model", "beta/model", "zeta/model")}) == 3


def test_names_that_hash_alike_still_get_different_colours() -> None:
    alone = {n: stable_colors([n])[n] for n in (f"m{i}" for i in range(60))}
    clash = next(
        (a, b) for a in alone for b in alone if a < b and alone[a] == alone[b]
    )  # 60 names, 18 colours: some two share one
    both = stable_colors(clash)
    assert both[clash[0]] == alone[clash[0]]  # the first by name keeps its own colour
    assert both[clash[1]] != both[clash[0]] and both[clash[1]] in LABEL_PALETTE
    assert stable_colors(f"n{i}" for i in range(40)).keys() == {f"n{i}" for i in range(40)}


def _best_of_k_titles(html: str) -> list[str]:
    return re.findall(r'<svg class="plot"[^>]*><title>([^<]*best of k[^<]*)</title>', html)


def test_one_run_per_task_draws_no_best_of_k_and_says_why(tmp_path: Path) -> None:
    _models(tmp_path, ["mockllm/a", "mockllm/b"], epochs=1)
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    assert _best_of_k_titles(html) == []
    family = html[html.index('id="family-rebench"') :]
    assert family.count("No best-of-k plot: no model or agent has 2 or more runs of") == 3
    assert "runs of every task" in family and family.count("runs of this task") == 2


def test_a_model_with_a_single_run_is_left_out_of_best_of_k_by_name(tmp_path: Path) -> None:
    _models(tmp_path, ["mockllm/many"], epochs=3)
    _models(tmp_path, ["mockllm/once"], epochs=1)
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    titles = _best_of_k_titles(html)
    assert titles == ["RE-Bench: best of k", "t1: best of k", "t2: best of k"]
    panels = re.findall(r'<svg class="plot"[^>]*><title>[^<]*best of k.*?</svg>', html, re.S)
    assert len(panels) == 3
    assert all("mockllm/many" in svg and "mockllm/once" not in svg for svg in panels)
    assert html.count("Not drawn, with a single run: mockllm/once.") == 3
    assert "No best-of-k plot" not in html


def test_errors_show_their_message_not_a_python_repr(tmp_path: Path) -> None:
    write_log(
        tmp_path,
        [
            Sample(task_id="t1", error="LabcoatError('t1: the grader exited 1: Oh no!')"),
            Sample(task_id="t2", error='GraderFailed("t2: the grader exited 1: ' + "x" * 400),
        ],
    )
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    runs = html.split('id="runs-table"')[1].split("</table>")[0]
    assert "<td>t1: the grader exited 1: Oh no!</td>" in runs
    assert "<td>t2: the grader exited 1: xxx" in runs  # cut short, still no repr
    assert "Error(" not in runs and "Failed(" not in runs


def test_the_card_says_which_agent_ran_without_a_model(tmp_path: Path) -> None:
    reported = {"provenance": {"model": {"reported": "labcoat/oracle"}}}
    write_log(tmp_path, [Sample(score_metadata=reported)], model="none/none", agent="oracle")
    write_log(tmp_path, [Sample()], model="none/none", agent="noop")
    write_log(tmp_path, [Sample()], model="openai/gpt-5")
    card = dict(results_card(read_runs(tmp_path)).sections[0][1])
    line = card["Model asked → reported"]
    assert "oracle agent (no model)" in line and "noop agent (no model)" in line
    assert "openai/gpt-5 → —" in line and "none/none" not in line


def test_the_leaderboard_comes_first_and_the_card_after_it_collapsed(tmp_path: Path) -> None:
    _models(tmp_path, ["mockllm/a"])
    html = write_report(tmp_path, tmp_path / "r.html").read_text()
    main = html[html.index("<main>") :]
    assert main.index('id="leaderboard"') < main.index('id="card"')
    board = main[main.index('id="leaderboard"') : main.index('id="card"')]
    assert board.index("<table") < board.index("<p class='note'>")  # figures, then notes
    assert re.search(r'id="card"><h2>Results card</h2><details class="card"><summary>', html)
    nav = html[html.index("<nav>") : html.index("</nav>")]
    assert nav.index("#leaderboard") < nav.index("#card")

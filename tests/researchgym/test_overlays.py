"""labcoat's overlays for upstream ResearchGym's test split: what they declare, when they
apply, and how they read each task's results table.

The tables under data/upstream-shapes/ have the shape of upstream's (same headers, row
labels, groups, continuation rows and placeholders) with numbers of our own; the
upstream checkout itself is exercised by test_upstream.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from labcoat.families.researchgym import TaskFolder, _overlays, discover, summarize
from labcoat.families.researchgym._extract import filled_method_rows, table_value
from labcoat.families.researchgym._folder import DESCRIPTION
from labcoat.families.researchgym._grading import GraderRun
from labcoat.families.researchgym._overlays import description_digest, shipped_overlays
from labcoat.families.researchgym._preflight import preflight
from labcoat.families.researchgym._sample import sidecar_used
from labcoat.families.researchgym._scoring import raw_values
from labcoat.families.researchgym._sidecar import Sidecar

SHAPES = Path(__file__).parent / "data" / "upstream-shapes"
UPSTREAM = Path(__file__).parent / "data" / "upstream-task"
TEST_SPLIT = {
    "continual-learning",
    "cross-modal-retrieval",
    "improving-replay-buffers",
    "materials-tokenization",
    "time-series-explanation",
}


def overlay(name: str) -> Sidecar:
    return shipped_overlays()[name][1].sidecar()


# the paper's table: sub-tasks, and the primary metric's baseline and SOTA
PAPER = {
    "continual-learning": (6, 88.5, 90.3),
    "cross-modal-retrieval": (14, 57.2, 59.2),
    "materials-tokenization": (12, 86.1, 87.8),
    "time-series-explanation": (7, 0.4, 0.5),
    "improving-replay-buffers": (9, 3395.2, 4101.8),
}


def test_one_overlay_per_task_of_the_test_split() -> None:
    overlays = shipped_overlays()
    assert set(overlays) == TEST_SPLIT == set(PAPER)
    for name, (path, found) in overlays.items():
        assert path.name == f"{name}.yaml"
        sidecar = found.sidecar()
        count, baseline, sota = PAPER[name]
        assert len(sidecar.subtasks) == count, name
        assert (sidecar.primary.baseline, sidecar.primary.sota) == (baseline, sota), name
        assert sidecar.primary.zero_point == 0.0
        assert "ResearchGym (Garikaparthi" in (sidecar.primary.sota_source or ""), name
        assert "ResearchGym (Garikaparthi" in (sidecar.primary.baseline_source or ""), name
        assert sidecar.grading.self_reported, name  # upstream graders read the agent's logs
        assert sidecar.resources.gpus == 1 and sidecar.network
        assert sidecar.oracle.files is None and sidecar.oracle.run is None
        for key, (_, metric) in sidecar.metric_keys.items():
            assert metric.baselines, key  # every metric's baselines, from the tables


@pytest.mark.parametrize("name", sorted(PAPER))
def test_the_papers_baseline_scores_baseline_over_sota_and_sota_scores_one(name: str) -> None:
    sidecar = overlay(name)
    _, baseline, sota = PAPER[name]
    at_baseline = summarize(sidecar, dict.fromkeys(sidecar.primary.of, baseline))
    assert at_baseline.normalized == pytest.approx(baseline / sota)
    assert at_baseline.beats_baseline is False
    at_sota = summarize(sidecar, dict.fromkeys(sidecar.primary.of, sota))
    assert at_sota.normalized == pytest.approx(1.0) and at_sota.beats_baseline is True


def test_primary_subtasks_are_the_ones_the_descriptions_mark() -> None:
    primary = {name: {s.id for s in overlay(name).primary_subtasks} for name in TEST_SPLIT}
    assert primary["continual-learning"] == {"cifar100"}
    assert primary["improving-replay-buffers"] == {"gym_hopper"}
    assert primary["time-series-explanation"] == {"pam"}
    assert primary["materials-tokenization"] == {"cls_ner_sofc", "cls_ner_matscholar"}
    assert primary["cross-modal-retrieval"] == {
        "qgs_clip_b_flickr",
        "qgs_clip_b_coco",
        "qgs_blip_b_flickr",
        "qgs_blip_b_coco",
        "reid_cuhk2icfg",
        "reid_icfg2cuhk",
    }
    assert overlay("continual-learning").primary.of == ("cifar100.acc",)
    assert overlay("materials-tokenization").primary.of == ("cls_ner_matscholar.micro",)


def _table_metrics(sidecar: Sidecar) -> dict:
    return {k: m for k, (_, m) in sidecar.metric_keys.items() if m.source.table is not None}


@pytest.mark.parametrize("name", sorted(TEST_SPLIT))
def test_untouched_results_table_scores_zero(name: str) -> None:
    """The table as upstream ships it (`--`, `-- --`, `Micro-F1` labels) holds no result."""
    markdown = (SHAPES / f"{name}.md").read_text()
    sidecar = overlay(name)
    # what a grader that found no results leaves: the table untouched, no summary file
    run = GraderRun(
        "bash grading/grade.sh",
        "/run",
        0,
        False,
        1.0,
        "No logs found",
        "",
        True,
        {DESCRIPTION: markdown},
    )
    raws = raw_values(sidecar, run)
    assert len(raws) == len(sidecar.metric_keys) and all(v is None for v in raws.values()), raws
    summary = summarize(sidecar, raws)
    assert summary.normalized == 0.0 and summary.completion_rate == 0.0
    assert summary.beats_baseline is False
    filled, rows = filled_method_rows(markdown)
    assert filled == 0 and rows > 0


# --- the tables as upstream's graders fill them in -------------------------------------


def _replace_rows(markdown: str, fill) -> str:
    """Replace each placeholder cell of `Your Method` rows the way a grader writes it."""
    counter = iter(range(1, 10_000))
    lines = []
    for line in markdown.splitlines():
        if line.startswith("| Your Method |"):
            cells = line.strip().strip("|").split("|")
            cells = [cells[0]] + [
                fill(next(counter)) if c.strip() in ("--", "-- --") else c for c in cells[1:]
            ]
            line = "|" + "|".join(cells) + "|"
        lines.append(line)
    return "\n".join(lines) + "\n"


FILLS = {
    # continual-learning: f"{acc:.2f} ({se:.2f}) {aaa:.2f} ({se:.2f})"
    "continual-learning": lambda i: f" {50 + i:.2f} (0.10) {60 + i:.2f} (0.20) ",
    # cross-modal-retrieval: f"{value:.1f}"
    "cross-modal-retrieval": lambda i: f" {10 + i * 0.5:.1f} ",
    # improving-replay-buffers: f"{mean:.2f} +/- {std:.2f}"
    "improving-replay-buffers": lambda i: f" {100 + i:.2f} +/- 5.00 ",
    # time-series-explanation: f"{mean:.3f}±{se:.3f}"
    "time-series-explanation": lambda i: f" {i / 100:.3f}±0.001 ",
}


@pytest.mark.parametrize("name", sorted(FILLS))
def test_filled_tables_give_every_subtask_its_own_value(name: str) -> None:
    markdown = _replace_rows((SHAPES / f"{name}.md").read_text(), FILLS[name])
    sidecar = overlay(name)
    raws = {k: table_value(markdown, m.source.table) for k, m in _table_metrics(sidecar).items()}
    assert len(raws) == len(sidecar.metric_keys)
    assert all(v is not None for v in raws.values()), raws
    assert len(set(raws.values())) == len(raws)  # each metric reads a cell of its own
    summary = summarize(sidecar, raws)
    assert summary.completion_rate == 1.0
    filled, rows = filled_method_rows(markdown)
    assert filled == rows


def test_continual_learning_reads_acc_and_aaa_of_one_cell() -> None:
    markdown = (SHAPES / "continual-learning.md").read_text()
    markdown = markdown.replace(
        "| Method | CIFAR100 Acc ↑ AAA ↑ |\n| :--- | :--- |\n| Baseline One | 80.00 (0.50) 85.00 (0.50) |\n| Your Method | -- -- |",
        "| Method | CIFAR100 Acc ↑ AAA ↑ |\n| :--- | :--- |\n| Baseline One | 80.00 (0.50) 85.00 (0.50) |\n| Your Method | 81.25 (0.40) 86.50 (0.30) |",
    )
    sidecar = overlay("continual-learning")
    raws = {k: table_value(markdown, m.source.table) for k, m in _table_metrics(sidecar).items()}
    assert raws["cifar100.acc"] == 81.25 and raws["cifar100.aaa"] == 86.5
    assert [k for k, v in raws.items() if v is not None] == ["cifar100.acc", "cifar100.aaa"]
    summary = summarize(sidecar, raws)
    assert summary.completion_rate == pytest.approx(1 / 6)
    assert summary.normalized == pytest.approx(81.25 / 90.3)


def test_materials_tokenization_reads_its_graders_json_summary() -> None:
    """Upstream's grader writes the Macro-F1 row outside the table: the JSON is read."""
    sidecar = overlay("materials-tokenization")
    metrics = {k: m for k, (_, m) in sidecar.metric_keys.items()}
    assert all(m.source.json_path and m.source.file for m in metrics.values())
    assert '--json-out "$PWD/labcoat-summary.json"' in sidecar.grading.command
    assert {m.source.file for m in metrics.values()} == {"labcoat-summary.json"}
    # the summary's shape: {table: {micro|macro: {column: {display, values, updated}}}}
    document: dict = {"generation": {"micro": {}, "macro": {}}, "classification": {}}
    document["classification"] = {"micro": {}, "macro": {}}
    for i, metric in enumerate(metrics.values()):
        assert metric.source.json_path is not None
        table, average, column, _ = metric.source.json_path.split(".")
        cell = {"display": f"{60 + i}.0 ±0.{i % 10}", "values": [0.6], "updated": True}
        document[table][average][column] = cell
    from labcoat.families.researchgym._extract import json_value

    values = {k: json_value(document, m.source.json_path or "") for k, m in metrics.items()}
    assert all(v is not None for v in values.values())
    assert values["cls_ner_sofc.macro"] != values["cls_ner_sofc.micro"]
    # cells the grader did not fill stay `--`: no value
    untouched = json.loads(json.dumps(document).replace('"display": "6', '"display": "--'))
    first = next(iter(metrics.values())).source.json_path or ""
    assert json_value(untouched, first) is None


# --- when an overlay applies ------------------------------------------------------------


def test_overlay_applies_only_to_the_description_it_was_written_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "toy-task"
    shutil.copytree(UPSTREAM, folder)
    description = (folder / "task_description.md").read_text()
    written_for = overlay("continual-learning").model_dump(by_alias=True)
    written_for["subtasks"] = [
        {
            "id": "split_a",
            "metric": "accuracy",
            "primary": True,
            "baselines": {"Baseline": 0.5},
            "source": {"table": {"header": "Split A Acc", "column": 1}},
        }
    ]
    written_for["primary"] = {"metric": "accuracy", "of": ["split_a"], "sota": 0.5}
    written_for["identity"] = {
        "name": "toy-task",
        "description_sha256": [description_digest(description)],
    }
    found = _overlays.Overlay.model_validate(written_for)
    monkeypatch.setattr(
        _overlays, "shipped_overlays", lambda: {"toy-task": (Path("toy-task.yaml"), found)}
    )
    applied = TaskFolder(folder)
    assert applied.sidecar is not None and applied.sidecar_origin == "overlay toy-task.yaml"
    # the sample names the file that applied, for its provenance to hash
    assert sidecar_used(applied) == {"path": "toy-task.yaml", "overlay": True}
    [entry] = discover(folder)
    assert entry.extra["subtasks"] == 1 and entry.extra["sidecar"] == "overlay toy-task.yaml"
    assert not entry.has_oracle
    assert preflight(entry).problems == []

    # the same text with Windows line endings is the same description
    (folder / "task_description.md").write_bytes(description.replace("\n", "\r\n").encode())
    assert TaskFolder(folder).sidecar is not None

    # an edited description (another baseline): the overlay does not apply, and says so
    (folder / "task_description.md").write_text(description.replace("0.50", "0.55"))
    edited = TaskFolder(folder)
    assert edited.sidecar is None and edited.sidecar_origin is None
    assert sidecar_used(edited) is None
    assert "does not apply" in (edited.overlay.mismatch or "")
    [entry] = discover(folder)
    assert entry.extra["subtasks"] is None and "does not apply" in entry.extra["overlay"]
    [problem] = preflight(entry).problems
    assert problem.startswith("overlay: ") and "sub-tasks undeclared" in problem

    # a labcoat.yaml beside the task wins over any overlay
    (folder / "task_description.md").write_text(description)
    shutil.copy(
        Path(__file__).parents[2]
        / "src/labcoat/suites/mini/researchgym/class-incremental/labcoat.yaml",
        folder / "labcoat.yaml",
    )
    assert TaskFolder(folder).sidecar_origin == "labcoat.yaml"
    own = {"path": str(folder / "labcoat.yaml"), "overlay": False}
    assert sidecar_used(TaskFolder(folder)) == own


def test_a_folder_named_like_an_upstream_task_with_another_description(tmp_path: Path) -> None:
    folder = tmp_path / "continual-learning"
    shutil.copytree(UPSTREAM, folder)
    shutil.copy(SHAPES / "continual-learning.md", folder / "task_description.md")
    [entry] = discover(folder)
    assert entry.problem is None and entry.extra["subtasks"] is None
    assert "continual-learning.yaml" in entry.extra["overlay"]


def test_no_sidecar_and_no_overlay_is_reported(tmp_path: Path) -> None:
    [entry] = discover(UPSTREAM)
    [problem] = preflight(entry).problems
    assert problem.startswith("sidecar: no labcoat.yaml and no labcoat overlay")


def test_missing_grader_script_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    shutil.copytree(UPSTREAM, folder)
    (folder / "grading" / "grade.sh").rename(folder / "grading" / "run.sh")
    [entry] = discover(folder)
    problems = preflight(entry).problems
    assert any(p.startswith("grader: ") and "grade.sh is missing" in p for p in problems)


def test_files_the_grader_needs_are_checked(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    shutil.copytree(UPSTREAM, folder)
    (folder / "labcoat.yaml").write_text(
        "grading: {requires: [grading/grade.py, eval/ner_datasets.py]}\n"
        "primary: {metric: acc, of: [a], sota: 1.0}\n"
        "subtasks:\n"
        "  - {id: a, metric: acc, primary: true, source: {table: {header: Split A, column: 1}}}\n"
    )
    [entry] = discover(folder)
    [problem] = preflight(entry).problems
    assert problem.startswith("grader: ") and "eval/ner_datasets.py is missing" in problem

#!/usr/bin/env python3
"""Write labcoat's overlays for upstream ResearchGym's test split (a maintainer's tool).

    .venv/bin/python scripts/researchgym_overlays.py <ResearchGym>/tasks/test [--check]

For every task folder named below it reads task_description.md, and writes
src/labcoat/families/researchgym/overlays/<task>.yaml: the folder's identity (name and
SHA-256 of the description), the sub-tasks declared here (which table cell holds each,
its metric, direction, primary or not) and, read from the description's own tables, every
baseline's value. The description states no result of the paper it was cut from, so each
sub-task's `sota` (normalized 1) is its best baseline in those tables, the prior state
of the art that the task asks to beat; `sota_source` says so.

With --check nothing is written: it exits 1 when a shipped overlay differs from what the
description gives (tests/researchgym/test_upstream.py runs it the same way).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labcoat.families.researchgym._extract import Table, cell_values, markdown_tables
from labcoat.families.researchgym._overlays import OVERLAY_DIR, description_digest

SOURCE = "github.com/Anikethh/ResearchGym, tasks/test"
SUMMARY = "labcoat-summary.json"  # where a grader that writes a JSON summary is told to


@dataclass(frozen=True)
class Cell:
    """One sub-task: a cell of the `Your Method` row(s) of one table."""

    id: str
    title: str
    metric: str
    header: str
    column: int | str
    value: int = 0
    occurrence: int = 0
    group: str | None = None
    offset: int = 0
    primary: bool = False
    json: str | None = None
    """Read the value from the grader's JSON summary (SUMMARY) instead of the table."""


@dataclass
class TaskSpec:
    title: str
    cells: list[Cell]
    timeout_minutes: float = 60
    memory_gb: float = 32
    grading_network: bool = False
    notes: list[str] = field(default_factory=list)
    command: str = "bash grading/grade.sh"
    requires: list[str] = field(default_factory=list)


def _continual_learning() -> TaskSpec:
    cells = []
    settings = [
        ("inr5", "ImageNet-R, 5 tasks", "ImageNet-R (N = 5)", 1),
        ("inr10", "ImageNet-R, 10 tasks", "ImageNet-R (N = 5)", 2),
        ("inr20", "ImageNet-R, 20 tasks", "ImageNet-R (N = 5)", 3),
        ("ina10", "ImageNet-A, 10 tasks", "ImageNet-A (N = 10)", 1),
        ("cifar100", "CIFAR-100, 10 tasks", "CIFAR100 Acc", 1),
        ("cub200", "CUB-200, 10 tasks", "CUB200 Acc", 1),
    ]
    for key, title, header, column in settings:
        for value, (metric, name) in enumerate((("acc", "Acc (%)"), ("aaa", "AAA (%)"))):
            cells.append(
                Cell(
                    f"{key}_{metric}",
                    f"{title}: {'average' if metric == 'acc' else 'average anytime'} accuracy",
                    name,
                    header,
                    column,
                    value=value,
                    primary=key == "cifar100",
                )
            )
    return TaskSpec("Rehearsal-free continual learning with foundation models", cells)


def _cross_modal_retrieval() -> TaskSpec:
    cells = []
    for table, header in (("image", "Gauss."), ("text", "Backtrans")):
        for key, group in (("blip_b", "BLIP ViT-B/16"), ("blip_l", "BLIP ViT-L/16")):
            cells.append(
                Cell(
                    f"qs_{table}_{key}",
                    f"Query shift on the {table} modality (COCO-C), {group}: mean over corruptions",
                    "Recall@1 (%)",
                    header,
                    "Avg.",
                    group=group,
                )
            )
    datasets = [
        ("flickr", "Base2Flickr", True),
        ("coco", "Base2COCO", True),
        ("fashion", "Base2Fashion", False),
        ("nocaps_id", "Base2Nocaps(ID)", False),
        ("nocaps_nd", "Base2Nocaps(ND)", False),
        ("nocaps_od", "Base2Nocaps(OD)", False),
    ]
    for key, group in (("clip_b", "CLIP ViT-B/16"), ("blip_b", "BLIP ViT-B/16")):
        for name, label, primary in datasets:
            for direction, column in (("i2t", "I2TR@1"), ("t2i", "T2IR@1")):
                cells.append(
                    Cell(
                        f"qgs_{key}_{name}_{direction}",
                        f"Query-gallery shift {label}, {group}, "
                        f"{'image-to-text' if direction == 'i2t' else 'text-to-image'}",
                        f"{column} (%)",
                        "Base2Flickr I2TR@1",
                        f"{label} {column}",
                        group=group,
                        primary=primary,
                    )
                )
    for key, column in (("cuhk2icfg", "CUHK2ICFG T2IR@1"), ("icfg2cuhk", "ICFG2CUHK T2IR@1")):
        cells.append(
            Cell(
                f"reid_{key}",
                f"Person re-identification {column.split()[0]}, CLIP ViT-B/16",
                "T2IR@1 (%)",
                "CUHK2ICFG T2IR@1",
                column,
                group="CLIP ViT-B/16",
                primary=True,
            )
        )
    return TaskSpec("Test-time adaptation for cross-modal retrieval under query shift", cells)


def _improving_replay_buffers() -> TaskSpec:
    cells = []
    dmc = [
        ("dmc_quadruped_walk", "DMC-100k Quadruped-Walk", 1),
        ("dmc_cheetah_run", "DMC-100k Cheetah-Run", 2),
        ("dmc_reacher_hard", "DMC-100k Reacher-Hard", 3),
        ("dmc_finger_turn_hard", "DMC Finger-Turn-Hard (300k steps)", 4),
        ("pixel_walker_walk", "Pixel-DMC-100k Walker-Walk", 5),
        ("pixel_cheetah_run", "Pixel-DMC-100k Cheetah-Run", 6),
    ]
    for key, title, column in dmc:
        cells.append(Cell(key, title, "average return", "DMC-100k", column))
    for key, title in (
        ("walker2d", "Walker2d-v2"),
        ("halfcheetah", "HalfCheetah-v2"),
        ("hopper", "Hopper-v2"),
    ):
        cells.append(
            Cell(
                f"gym_{key}",
                f"Gym {title}, 100k steps",
                "average return",
                "Walker2d-v2",
                title,
                primary=key == "hopper",
            )
        )
    return TaskSpec("Generative replay for sample-efficient online RL", cells)


def _materials_tokenization() -> TaskSpec:
    cells = []
    # upstream's grader writes the Macro-F1 row outside the table (a row of its own after
    # it), so values are read from its JSON summary; baselines from the tables
    generation = ["NER", "RC", "EAE", "PC", "SAR", "SC", "SF", "Overall"]
    for offset, metric in enumerate(("Micro-F1", "Macro-F1")):
        average = metric.split("-")[0].lower()
        for task in generation:
            cells.append(
                Cell(
                    f"gen_{task.lower()}_{average}",
                    f"MatSci-NLP generation, {task}",
                    f"{metric} (%)",
                    "| SAR |",
                    task,
                    offset=offset,
                    json=f"generation.{average}.{task}.display",
                )
            )
    classification = [
        ("ner_sofc", "NER SOFC (test)", ("micro", "macro"), "macro"),
        ("ner_matscholar", "NER Matscholar (test)", ("micro", "macro"), "micro"),
        ("sf", "SF (test)", ("micro", "macro"), None),
        ("rc", "RC (test)", ("micro", "macro"), None),
    ]
    for key, column, metrics, primary in classification:
        for offset, metric in enumerate(metrics):
            cells.append(
                Cell(
                    f"cls_{key}_{metric}",
                    f"Classification, {column}",
                    f"{metric.capitalize()}-F1 (%)",
                    "NER SOFC (val)",
                    column,
                    offset=offset,
                    primary=metric == primary,
                    json=f"classification.{metric}.{key}_test.display",
                )
            )
    cells.append(
        Cell(
            "cls_pc_accuracy",
            "Classification, PC (glass science), test",
            "accuracy (%)",
            "NER SOFC (val)",
            "PC* (test)",
            json="classification.micro.pc_test.display",
        )
    )
    return TaskSpec(
        "Materials-aware tokenization for scientific language models",
        cells,
        timeout_minutes=720,
        grading_network=True,
        command=f'bash grading/grade.sh --json-out "$PWD/{SUMMARY}"',
        # the NER evaluation the grader runs imports this module; the repository as
        # published does not hold it (labcoat check says so rather than assuming)
        requires=["eval/classification/ner/ner_datasets.py"],
        notes=[
            "the grader fine-tunes SciBERT with the agent's tokenizer: it downloads the "
            "backbone (network) and needs a GPU to finish in time",
        ],
    )


def _time_series_explanation() -> TaskSpec:
    cells = []
    for dataset in ("PAM", "Boiler", "Epilepsy", "Wafer", "Freezer"):
        for substitution, label in (("avg", "Avg."), ("zero", "Zero")):
            cells.append(
                Cell(
                    f"{dataset.lower()}_{substitution}",
                    f"{dataset}, CPD with {'average' if substitution == 'avg' else 'zero'} "
                    f"substitution (10% masked)",
                    "CPD",
                    "PAM Avg.",
                    f"{dataset} {label}",
                    primary=dataset == "PAM",
                )
            )
    for occurrence, dataset in enumerate(("switch_feature", "state")):
        for metric in ("CPD", "AUP", "AUR"):
            cells.append(
                Cell(
                    f"{dataset}_{metric.lower()}",
                    f"{dataset.replace('_', '-').title()} (synthetic), {metric}",
                    metric,
                    "CPD ↑",
                    f"{metric} ↑",
                    occurrence=occurrence,
                )
            )
    return TaskSpec("Directional attribution for time-series classifiers", cells)


TASKS = {
    "continual-learning": _continual_learning,
    "cross-modal-retrieval": _cross_modal_retrieval,
    "improving-replay-buffers": _improving_replay_buffers,
    "materials-tokenization": _materials_tokenization,
    "time-series-explanation": _time_series_explanation,
}


def _label(row: list[str]) -> str:
    return row[0].strip().strip("*").lstrip("•").strip() if row else ""


def _table(markdown: str, cell: Cell) -> Table:
    tables = [t for h, t in markdown_tables(markdown) if cell.header.lower() in h.lower()]
    return tables[cell.occurrence]


def _column(table: Table, cell: Cell) -> int:
    if isinstance(cell.column, int):
        return cell.column
    names = [h.lower() for h in table.header]
    return names.index(cell.column.lower())


def baselines(markdown: str, cell: Cell) -> dict[str, float]:
    """Every method's value in the sub-task's cell, as the description's table states it."""
    table = _table(markdown, cell)
    column = _column(table, cell)
    rows = table.rows
    start, end = 0, len(rows)
    if cell.group is not None:
        start = next(i for i, r in enumerate(rows) if cell.group.lower() in _label(r).lower())
        end = next((i for i in range(start + 1, len(rows)) if rows[i][0].startswith("**")), end)
    found: dict[str, float] = {}
    for i in range(start, end):
        label = _label(rows[i])
        if not label or label.lower() == "your method":
            continue
        name = "source model (no adaptation)" if i == start and cell.group else label
        target = i + cell.offset
        if target >= len(rows) or (cell.offset and _label(rows[target])):
            continue
        values = cell_values(rows[target][column]) if column < len(rows[target]) else None
        if values is not None and cell.value < len(values):
            found[name] = values[cell.value]
    return found


def overlay(task_dir: Path, spec: TaskSpec) -> dict[str, Any]:
    markdown = (task_dir / "task_description.md").read_text(encoding="utf-8")
    subtasks = []
    for cell in spec.cells:
        found = baselines(markdown, cell)
        if not found:
            raise SystemExit(f"{task_dir.name}: {cell.id}: no baseline values in its cell")
        best = max(found, key=lambda k: found[k])
        table: dict[str, Any] = {"header": cell.header}
        for key in ("occurrence", "group", "offset"):
            if getattr(cell, key):
                table[key] = getattr(cell, key)
        table["column"] = cell.column
        if cell.value:
            table["value"] = cell.value
        source = {"json": cell.json, "file": SUMMARY} if cell.json else {"table": table}
        subtasks.append(
            {
                "id": cell.id,
                "title": cell.title,
                "metric": cell.metric,
                "higher_is_better": True,
                "primary": cell.primary,
                "baselines": found,
                "sota": found[best],
                "sota_source": f"best baseline in the task's table ({best}); the paper's "
                f"own result is not in the task's files",
                "source": source,
            }
        )
    document: dict[str, Any] = {
        "identity": {
            "name": task_dir.name,
            "description_sha256": [description_digest(markdown)],
            "source": f"{SOURCE}/{task_dir.name}",
        },
        "title": spec.title,
        "time_limit_minutes": 720,
        "resources": {"memory_gb": spec.memory_gb, "gpus": 1},
        "network": True,
        "grading": {
            "command": spec.command,
            "self_reported": True,
            "timeout_minutes": spec.timeout_minutes,
            **({"network": True} if spec.grading_network else {}),
            **({"requires": spec.requires} if spec.requires else {}),
        },
        "subtasks": subtasks,
    }
    return document


HEADER = """\
# labcoat's overlay for upstream ResearchGym's {name} (see docs/researchgym.md).
# Written by scripts/researchgym_overlays.py from the task's own task_description.md:
# baselines are its tables' values; `sota` is each cell's best baseline (the description
# does not state the paper's result). Applies only to the description with this SHA-256.
{notes}"""


def render(name: str, spec: TaskSpec, document: dict[str, Any]) -> str:
    notes = "".join(f"# Note: {n}\n" for n in spec.notes)
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return HEADER.format(name=name, notes=notes) + body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("test_split", type=Path, help="<ResearchGym>/tasks/test")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    stale = []
    for name, make in TASKS.items():
        spec = make()
        text = render(name, spec, overlay(args.test_split / name, spec))
        target = OVERLAY_DIR / f"{name}.yaml"
        if args.check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target} ({len(spec.cells)} sub-tasks)")
    if stale:
        print(f"overlays that differ from the descriptions: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

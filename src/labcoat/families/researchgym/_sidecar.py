"""`labcoat.yaml` beside a ResearchGym task folder: the sub-tasks upstream leaves implicit.

Upstream, sub-tasks exist only as table rows inside each grader. The sidecar declares them
at the paper's grain (one per experimental setting, each with its metrics, their
directions and the description's baselines), says where in the grader's output each value
is found, and names the task's primary metric with the baseline and SOTA it is scored
against. It also holds what the agent must never see (SOTA values), which is why the
sidecar itself is protected.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from pydantic import ConfigDict, Field, model_validator

from labcoat._errors import TaskDataError
from labcoat._util.yaml_file import load_model
from labcoat.families._entry import ValidationThresholds
from labcoat.families._sidecar_parts import KeepWorkspace, Resources, StrictModel, ValidationSpec

SIDECAR = "labcoat.yaml"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class TableSource(StrictModel):
    """A cell of a markdown table in task_description.md, as the grader left it."""

    header: str
    """Text found in the table's header row (picks the table)."""
    occurrence: int = Field(default=0, ge=0)
    """Which of the tables whose header has that text (0 = the first): upstream repeats
    headers, e.g. one `| Method | CPD ↑ | AUP ↑ | AUR ↑ |` table per dataset."""
    group: str | None = None
    """Text of a row label that opens a group of rows (e.g. `**BLIP ViT-B/16**`): the row
    is then the first `row` after it, before the next bold label. Without a group, the
    table's last `row` is read."""
    row: str = "Your Method"
    """Label in the first cell of the row."""
    offset: int = Field(default=0, ge=0)
    """Rows below that one: a continuation row with an empty label, e.g. the Macro-F1
    line under `| Your Method | Micro-F1 | ... |`."""
    column: int | str
    """1-based index among the cells after the label, or the header cell's text."""
    value: int = Field(default=0, ge=0)
    """Which value in the cell: `86.75 (0.12) 90.1 (0.3)` holds two (86.75 and 90.1;
    errors in parentheses or after ± are not values)."""


class Source(StrictModel):
    """Where a sub-task's value is in the grader's output: exactly one of the three."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    json_path: str | None = Field(default=None, alias="json")
    """`json:` in the file. Dotted path (`a.b[0].c`) into a JSON document."""
    file: str | None = None
    """That JSON document, relative to the folder the grader runs in (for upstream graders,
    a scratch copy of the task folder); default: $LABCOAT_GRADE_OUTPUT."""
    regex: str | None = None
    """Pattern searched in the grader's stdout; group 1 (or the match) of the last match."""
    table: TableSource | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Source:
        kinds = [k for k in ("json_path", "regex", "table") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of json, regex or table")
        if self.file is not None and self.json_path is None:
            raise ValueError("`file` goes with `json`")
        if self.file is not None and (
            self.file.startswith("/") or ".." in Path(self.file).parts or not self.file.strip()
        ):
            raise ValueError(f"file {self.file!r}: give a path inside the grader's folder")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as ex:
                raise ValueError(f"regex does not compile: {ex}") from None
        return self


def _check_id(value: str) -> None:
    if not _ID.match(value):
        raise ValueError(f"id {value!r}: use letters, digits, '_', '-' and '.'")


def _best(baselines: dict[str, float], higher_is_better: bool) -> tuple[str, float] | None:
    if not baselines:
        return None
    pick = max if higher_is_better else min
    name = pick(baselines, key=lambda k: baselines[k])
    return name, baselines[name]


class MetricSpec(StrictModel):
    """One value a sub-task reports (detail: the run's score uses only the primary
    metric), with the description's baselines for it."""

    id: str
    metric: str
    """What it measures, for people (`Acc (%)`)."""
    higher_is_better: bool = True
    baselines: dict[str, float] = Field(default_factory=dict)
    """Baseline name -> value, as in the task description's tables."""
    bounds: tuple[float, float] | None = None
    """The values the metric can take (`[0, 100]` for a percentage): a value outside is
    no valid result, and an integrity flag says so."""
    source: Source

    @model_validator(mode="after")
    def _consistent(self) -> MetricSpec:
        _check_id(self.id)
        if not all(math.isfinite(v) for v in self.baselines.values()):
            raise ValueError("baselines must be finite numbers")
        if self.bounds is not None and not self.bounds[0] < self.bounds[1]:
            raise ValueError(f"bounds {list(self.bounds)}: give [low, high] with low < high")
        return self

    @property
    def best_baseline(self) -> tuple[str, float] | None:
        return _best(self.baselines, self.higher_is_better)


class SubtaskSpec(StrictModel):
    """One experimental setting of the paper (a dataset, a split, an environment): it is
    complete when every one of its metrics has a valid result.

    A setting with one value may give that metric inline (`metric`, `higher_is_better`,
    `baselines`, `source`); its metric's id is then the sub-task's id."""

    id: str
    title: str | None = None
    primary: bool = False
    """The description marks it primary (shown; the score uses `primary:` at the top)."""
    metrics: tuple[MetricSpec, ...] = ()
    metric: str | None = None
    higher_is_better: bool = True
    baselines: dict[str, float] = Field(default_factory=dict)
    bounds: tuple[float, float] | None = None
    source: Source | None = None

    @model_validator(mode="before")
    @classmethod
    def _moved_fields(cls, data: object) -> object:
        if isinstance(data, dict) and ("sota" in data or "zero" in data):
            raise ValueError(
                "`sota` and `zero` belong to the task's `primary:` block now, not to each "
                "sub-task (docs/researchgym.md, The sidecar)"
            )
        return data

    @model_validator(mode="after")
    def _consistent(self) -> SubtaskSpec:
        _check_id(self.id)
        inline = self.source is not None or self.metric is not None or self.baselines or self.bounds
        if self.metrics and inline:
            raise ValueError("give either `metrics` or one inline metric (metric, source)")
        if not self.metrics and (self.source is None or self.metric is None):
            raise ValueError("give `metrics`, or `metric` and `source` for one value")
        ids = [m.id for m in self.metrics]
        if len(set(ids)) != len(ids):
            raise ValueError(f"a metric id is declared twice in {ids}")
        return self

    @property
    def all_metrics(self) -> tuple[MetricSpec, ...]:
        if self.metrics:
            return self.metrics
        assert self.source is not None and self.metric is not None
        return (
            MetricSpec(
                id=self.id,
                metric=self.metric,
                higher_is_better=self.higher_is_better,
                baselines=self.baselines,
                bounds=self.bounds,
                source=self.source,
            ),
        )

    def metric_key(self, metric: MetricSpec) -> str:
        """`<sub-task>` for an inline metric, else `<sub-task>.<metric>`."""
        return self.id if not self.metrics else f"{self.id}.{metric.id}"


class PrimaryMetric(StrictModel):
    """The task's primary metric: what normalized performance and "beats the baseline"
    are computed on. Its value is the mean of the metrics it names, all of which must
    have a valid result."""

    metric: str
    """What it is, for people (`CIFAR-100 Acc (%)`)."""
    of: tuple[str, ...] = Field(min_length=1)
    """Metric keys: `<sub-task>.<metric>`, or `<sub-task>` for a one-value sub-task."""
    higher_is_better: bool = True
    baseline: float | None = None
    """The value to beat (the paper's baseline for this metric)."""
    baseline_source: str | None = None
    sota: float
    """The value normalized to 1 (withheld from the agent)."""
    sota_source: str | None = None
    zero: float | None = None
    """The value normalized to 0: default 0; required when lower is better."""
    max_normalized: float = Field(default=2.0, gt=1)
    """Normalized performance above this is capped here, with an integrity flag: twice
    the paper's result is a claim to check before it moves a mean."""

    @model_validator(mode="after")
    def _consistent(self) -> PrimaryMetric:
        values = [self.sota, *(v for v in (self.baseline, self.zero) if v is not None)]
        if not all(math.isfinite(v) for v in values):
            raise ValueError("sota, zero and baseline must be finite numbers")
        if not self.higher_is_better and self.zero is None:
            raise ValueError("a lower-is-better metric needs `zero`: the value that scores 0")
        zero = self.zero_point
        if self.sota == zero:
            raise ValueError("sota equals zero: nothing to normalize against")
        if (self.sota > zero) != self.higher_is_better:
            raise ValueError(
                f"higher_is_better is {self.higher_is_better} but sota ({self.sota}) is "
                f"{'below' if self.higher_is_better else 'above'} zero ({zero})"
            )
        if self.baseline is not None and (
            self.sota <= self.baseline if self.higher_is_better else self.sota >= self.baseline
        ):
            raise ValueError(
                f"sota ({self.sota}) does not beat baseline ({self.baseline}), and "
                f"{'higher' if self.higher_is_better else 'lower'} is better"
            )
        return self

    @property
    def zero_point(self) -> float:
        return self.zero if self.zero is not None else 0.0


class GradingSpec(StrictModel):
    command: str = "bash grading/grade.sh"
    self_reported: bool = True
    """True: the grader reads results the agent's own runs wrote (upstream graders), and
    scores are marked self-reported. False: it recomputes every metric from the agent's
    artifacts against held-out data."""
    timeout_minutes: float = Field(default=60, gt=0)
    network: bool = False
    """Whether the grader may use the network (through the task's blocklist), e.g. an
    upstream grader that downloads the backbone it fine-tunes."""
    requires: tuple[str, ...] = ()
    """Files of the task folder the grader needs (paths relative to it): `labcoat check`
    reports each one that is missing (an upstream folder shipped without a module its
    grader imports)."""


class OracleSpec(StrictModel):
    files: str | None = None
    """Folder of the task written into the agent's workspace (at `target`)."""
    target: str = "."
    run: str | None = None
    """Shell command run in the agent's workspace afterwards."""

    @model_validator(mode="after")
    def _inside(self) -> OracleSpec:
        for path in (self.files, self.target):
            if path is not None and (path.startswith("/") or ".." in Path(path).parts):
                raise ValueError(f"{path!r}: give a path inside the task / the workspace")
        return self


class Sidecar(StrictModel):
    title: str | None = None
    time_limit_minutes: float = Field(default=720, gt=0)
    """Upstream runs last 12 hours."""
    requirements: tuple[str, ...] | None = None
    """Python packages of the task; default: requirements.txt."""
    resources: Resources = Resources()
    network: bool = False
    """Whether the agent may use the network (through the blocklist)."""
    install: bool = False
    """Run the task's install.sh in the agent's sandbox before the agent starts."""
    grading: GradingSpec = GradingSpec()
    protected: tuple[str, ...] = ()
    """Paths kept out of the agent's workspace, beyond those always kept out."""
    keep_workspace: KeepWorkspace = KeepWorkspace()
    """What of the final workspace is not kept for `labcoat regrade`."""
    oracle: OracleSpec = OracleSpec()
    validation: ValidationSpec = ValidationSpec()
    primary: PrimaryMetric
    subtasks: tuple[SubtaskSpec, ...]

    @model_validator(mode="after")
    def _unique_ids(self) -> Sidecar:
        ids = [s.id for s in self.subtasks]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"sub-task id {duplicates[0]!r} is declared twice")
        known = set(self.metric_keys)
        unknown = [key for key in self.primary.of if key not in known]
        if unknown:
            raise ValueError(
                f"primary.of: {unknown[0]!r} is no sub-task's metric (known: "
                f"{', '.join(sorted(known))})"
            )
        return self

    @property
    def metric_keys(self) -> dict[str, tuple[SubtaskSpec, MetricSpec]]:
        """Every metric by its key (`<sub-task>.<metric>`, or `<sub-task>` when inline)."""
        return {s.metric_key(m): (s, m) for s in self.subtasks for m in s.all_metrics}

    @property
    def thresholds(self) -> ValidationThresholds:
        return self.validation.thresholds

    @property
    def primary_subtasks(self) -> tuple[SubtaskSpec, ...]:
        """Sub-tasks the primary metric reads, and those the description marks primary."""
        reads = {key.split(".", 1)[0] for key in self.primary.of}
        return tuple(s for s in self.subtasks if s.primary or s.id in reads)


def validate_sidecar(sidecar: Sidecar, path: Path) -> None:
    """What the model alone cannot check; errors name the file and field."""
    if not sidecar.subtasks:
        raise TaskDataError(path, "subtasks", "declares no sub-tasks")
    for name in sidecar.protected:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise TaskDataError(path, "protected", f"{name!r}: give a path inside the task")
    for name in sidecar.grading.requires:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise TaskDataError(path, "grading.requires", f"{name!r}: give a path inside the task")


def load_sidecar(task_dir: Path) -> Sidecar | None:
    path = task_dir / SIDECAR
    if not path.exists():
        return None
    sidecar = load_model(Sidecar, path)
    validate_sidecar(sidecar, path)
    return sidecar

"""Grading kept samples again: one Inspect eval of the families' own tasks and scorers.

Per original log, the family's task is built again from the log's task arguments (the
agent swapped for `noop`, the sandbox for `bwrap`), its dataset narrowed to the kept
samples, and `replay` added after the agent; the eval writes a real `.eval` log, moved
to `<folder>.regrades/<time>/` beside the original's folder (`_where`: never inside the
eval set, whose resume it would stop). The original logs are only read.
"""

from __future__ import annotations

import datetime
import json
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval, task_with
from inspect_ai.dataset import MemoryDataset
from inspect_ai.log import EvalLog

from labcoat._errors import LabcoatError
from labcoat._util.inspect_names import NO_MODEL
from labcoat._util.quiet import quiet_console
from labcoat._util.suggest import did_you_mean
from labcoat.families import family_grader_version, family_spec, is_family, task_function
from labcoat.families._spec import timed_at_top_level
from labcoat.regrade._find import (
    ORIGINAL,
    REGRADE_META,
    Candidate,
    find_samples,
    score_figures,
)
from labcoat.regrade._replay import REPLAY_NOTES, plan_key, then_replay
from labcoat.regrade._where import regrades_folder


@dataclass
class Regraded:
    """One sample's regrade (or why it has none)."""

    task: str
    family: str
    sample_id: str
    epoch: int
    log: str
    old: float | None
    new: float | None = None
    error: str | None = None
    missing: list[str] | None = None
    """Files kept by reference that the regrade's workspace lacked."""
    not_regradable: str | None = None
    timed: bool = False
    """A timing score (RE-Bench `timing_sensitive`): the regrade measures it again, so it
    moves with the machine's noise even when the grader did not change."""

    @property
    def changed(self) -> bool | None:
        if self.not_regradable or self.error:
            return None
        return not _same(self.old, self.new)

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "changed": self.changed}


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (a != a and b != b)  # NaN (no normalized scale) equals NaN


def _task_id(c: Candidate) -> str:
    tasks = c.task_args.get("tasks")
    ids = [tasks] if isinstance(tasks, str) else list(tasks or [])
    if c.sample_id in ids or len(ids) != 1:
        return c.sample_id
    return str(ids[0])


def _build(
    log: str,
    group: list[Candidate],
    plan_file: Path,
    meta: dict[str, Any],
    task_args: dict[str, Any],
) -> Task:
    first = group[0]
    task_fn = task_function(first.family)
    task = task_fn(**{**first.task_args, **task_args, "agent": "noop", "sandbox": "bwrap"})
    ids = {c.sample_id for c in group}
    samples = [s for s in task.dataset if str(s.id) in ids]
    missing = ids - {str(s.id) for s in samples}
    if missing:
        raise LabcoatError(f"the task no longer has sample(s) {', '.join(sorted(missing))}")
    return task_with(
        task,
        dataset=MemoryDataset(samples, name=task.dataset.name),
        solver=then_replay(task.solver, str(plan_file)),
        epochs=max(c.epoch for c in group),
        metadata={**(task.metadata or {}), REGRADE_META: {**meta, "original_log": log}},
    )


def _require_known(task_ids: list[str], candidates: list[Candidate], log_dir: Path) -> None:
    """An id that no sample in the logs has is a typo, not an empty regrade."""
    tasks = sorted({_task_id(c) for c in candidates})
    known = {*tasks, *(c.sample_id for c in candidates)}
    missing = [i for i in task_ids if i not in known]
    if missing:
        named = ", ".join(i + did_you_mean(i, tasks) for i in missing)
        raise LabcoatError(f"{log_dir}: no sample of task(s) {named} in these logs")


def regrade_logs(
    log_dir: Path,
    *,
    task_ids: list[str] | None = None,
    max_samples: int | None = None,
    display: str | None = None,
    task_args: dict[str, dict[str, Any]] | None = None,
    starting: Callable[[int, int], None] | None = None,
) -> tuple[list[Path], list[Regraded]]:
    """Regrade every kept sample under `log_dir` (of `task_ids`, when given): the folders
    the regrade logs went to (one per folder of original logs; none: nothing was
    regraded), and one row per sample.
    `task_args` ({family: {argument: value}}) replace those the original logs recorded
    (a secrets file of this machine, say). `starting(samples, logs)` is called before
    the eval runs."""
    if not log_dir.is_dir():
        raise LabcoatError(f"{log_dir}: no such folder")
    found = find_samples(log_dir)
    if not found.logs:
        raise LabcoatError(f"{log_dir}: no .eval logs found")
    chosen = [
        c
        for c in found.candidates
        if not task_ids or _task_id(c) in task_ids or c.sample_id in task_ids
    ]
    if task_ids:
        _require_known(task_ids, found.candidates, log_dir)
    rows = [
        Regraded(
            _task_id(c),
            c.family,
            c.sample_id,
            c.epoch,
            c.log,
            c.old.get("normalized"),
            not_regradable=c.reason,
        )
        for c in chosen
        if c.reason is not None
    ]
    todo = [c for c in chosen if c.reason is None]
    if not todo:
        return [], rows
    now = datetime.datetime.now(datetime.UTC)
    stamp = now.strftime("%Y-%m-%dT%H-%M-%S")
    by_log: dict[str, list[Candidate]] = defaultdict(list)
    for c in todo:
        by_log[c.log].append(c)
    tasks, roles, built = [], {}, []
    folders: dict[str, Path] = {}  # original log -> where its regrade's log goes
    for index, (log, group) in enumerate(sorted(by_log.items())):
        out = regrades_folder(log) / stamp
        plan_file = out / f".plan-{index}.json"
        family = group[0].family
        meta = {"grader": family_grader_version(family), "regraded_at": now.isoformat()}
        try:
            tasks.append(_build(log, group, plan_file, meta, (task_args or {}).get(family, {})))
        except LabcoatError as ex:
            # this log's samples say why; the other logs are regraded
            rows += [_unbuilt(c, f"its task could not be built again: {ex}") for c in group]
            continue
        plan = {
            plan_key(c.sample_id, c.epoch): {"manifest": str(c.manifest), "original": c.original()}
            for c in group
        }
        out.mkdir(parents=True, exist_ok=True)  # only for a task that runs
        plan_file.write_text(json.dumps(plan, indent=1), encoding="utf-8")
        built += group
        folders[log] = out
        roles.update(group[0].model_roles)
    if not tasks:
        return [], rows
    if starting is not None:
        starting(len(built), len(tasks))
    # one eval for every log (samples of all of them run at once), written apart and
    # then moved, each beside its original's folder
    with (
        tempfile.TemporaryDirectory(prefix="labcoat-regrade-") as staging,
        quiet_console(display == "none"),
    ):
        logs = eval(
            tasks,
            log_dir=staging,
            model=NO_MODEL,
            model_roles=roles or None,
            max_samples=max_samples,
            display=display,  # type: ignore[arg-type]
            fail_on_error=False,
            retry_on_error=0,
            score_display=False,
        )
        results = _results(logs, built)  # first: a log's samples are read from its file
        moved = _move(logs, folders)
    return moved, rows + results


def _move(logs: list[EvalLog], folders: dict[str, Path]) -> list[Path]:
    """Move each regrade log to its original's regrade folder; the folders, once each."""
    done: list[Path] = []
    for log in logs:
        original = str((log.eval.metadata or {}).get(REGRADE_META, {}).get("original_log"))
        folder = folders[original]
        shutil.move(log.location, folder / Path(log.location).name)
        if folder not in done:
            done.append(folder)
    return done


def _results(logs: list[EvalLog], todo: list[Candidate]) -> list[Regraded]:
    done: dict[str, Regraded] = {}
    for log in logs:
        for sample in log.samples or []:
            original = (sample.store or {}).get(ORIGINAL)
            if not isinstance(original, dict):
                continue  # an epoch that was never kept: not one of ours
            error = sample.error.message.strip().splitlines()[0][:300] if sample.error else None
            notes = (sample.store or {}).get(REPLAY_NOTES) or {}
            done[original["uuid"]] = Regraded(
                "",
                "",
                str(sample.id),
                int(sample.epoch),
                original["log"],
                (original.get("old") or {}).get("normalized"),
                new=score_figures(sample).get("normalized"),
                error=error,
                missing=list(notes.get("missing") or []) or None,
                timed=_timed(sample.metadata or {}),
            )
    rows = []
    for c in todo:
        row = done.get(c.uuid) or _unbuilt(c, "no result in the regrade's log")
        row.task, row.family = _task_id(c), c.family
        rows.append(row)
    return rows


def _timed(metadata: dict[str, Any]) -> bool:
    """Whether the sample's score times code, as the sample's family reads its metadata."""
    family = metadata.get("family")
    if isinstance(family, str) and is_family(family):
        return family_spec(family).timed(metadata)
    return timed_at_top_level(metadata)


def _unbuilt(c: Candidate, error: str) -> Regraded:
    """The row of a sample the regrade has no result for."""
    return Regraded(
        _task_id(c), c.family, c.sample_id, c.epoch, c.log, c.old.get("normalized"), error=error
    )

"""The family registry: which families exist and how to find their tasks in a folder."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.names import check_name, shown, unsafe_character
from labcoat._util.suggest import did_you_mean
from labcoat.families._entry import TaskEntry

if TYPE_CHECKING:  # Inspect is imported only when a task runs (`labcoat list` stays fast)
    from inspect_ai import Task

# name -> module that defines `discover(root) -> list[TaskEntry]` and an Inspect @task
# named like the family. Imported lazily so `labcoat list` stays fast.
FAMILY_MODULES: dict[str, str] = {
    "rebench": "labcoat.families.rebench",
    "researchcodebench": "labcoat.families.researchcodebench",
    "paperbench": "labcoat.families.paperbench",
    "researchgym": "labcoat.families.researchgym",
}


BY_IDS = {"rebench"}
"""Families whose `discover(root, task_ids)` loads only the tasks named."""


class FamilyModule(Protocol):
    def discover(self, root: Path, *args: Iterable[str]) -> list[TaskEntry]: ...


def family_names() -> list[str]:
    return list(FAMILY_MODULES)


def family_module(name: str) -> FamilyModule:
    if name not in FAMILY_MODULES:
        known = ", ".join(FAMILY_MODULES)
        raise LabcoatError(
            f"unknown family '{name}'{did_you_mean(name, FAMILY_MODULES)} (known: {known})"
        )
    return importlib.import_module(FAMILY_MODULES[name])  # type: ignore[return-value]


def task_function(name: str) -> Callable[..., Task]:
    """The family's Inspect @task (named like the family)."""
    task_fn = getattr(family_module(name), name, None)
    if task_fn is None:
        raise LabcoatError(f"the {name} family cannot run tasks in this build")
    return task_fn  # type: ignore[no-any-return]


def discover(
    root: Path, families: Iterable[str] | None = None, task_ids: Iterable[str] | None = None
) -> list[TaskEntry]:
    """All tasks under `root`, in every family's native format (or only `families`).

    `task_ids`: the tasks wanted; a family whose discovery runs code (RE-Bench's
    get_tasks()) then loads only what they name (its `discover(root, task_ids)`)."""
    if not root.exists():
        raise LabcoatError(f"{root}: no such file or directory")
    ids = list(task_ids or [])
    entries: list[TaskEntry] = []
    for name in families or family_names():
        module = family_module(name)
        # a suite folder holds one subfolder per family, each in that family's format
        nested = root / name
        folder = nested if nested.is_dir() else root
        try:
            by_ids = ids and name in BY_IDS
            found = module.discover(folder, ids) if by_ids else module.discover(folder)
            entries.extend(_plain_id(e) for e in found)
        except LabcoatError as ex:
            # this family's data is broken as a whole: say so, and list the others
            entries.append(broken_entry(name, folder, str(ex)))
    return entries


def _plain_id(entry: TaskEntry) -> TaskEntry:
    """An entry whose id is not plain text (a newline, a bidi control; the family's loader
    names the file where it can) is broken, shown with the character escaped."""
    if unsafe_character(entry.id) is None:
        return entry
    problem = entry.problem
    if problem is None:
        try:
            check_name(entry.id, shown(str(entry.path)), "id", "a task id")
        except TaskDataError as ex:
            problem = str(ex)
    return broken_entry(entry.family, entry.path, problem or "", task_id=shown(entry.id))


def broken_entry(family: str, path: Path, problem: str, task_id: str | None = None) -> TaskEntry:
    """An entry for a task (or a family folder) whose files cannot be loaded."""
    return TaskEntry(
        id=shown(task_id or path.name),
        family=family,
        title="(cannot be loaded)",
        samples=0,
        path=path,
        problem=problem,
    )


def select(
    entries: list[TaskEntry], task_ids: Iterable[str] | None, family: str | None
) -> list[TaskEntry]:
    """Filter by family and task id; an unknown id is an error, not an empty run."""
    chosen = [e for e in entries if family is None or e.family == family]
    ids = list(task_ids or [])
    if ids:
        known = {e.id for e in chosen}
        missing = [i for i in ids if i not in known]
        if missing:
            raise LabcoatError(_unknown(missing, chosen))
        chosen = [e for e in chosen if e.id in ids]
    return chosen


def _unknown(missing: list[str], entries: list[TaskEntry]) -> str:
    """Why the ids are not there: a folder that cannot be loaded is listed under its own
    name, so `fam/main` of a broken `fam` says what is broken instead of "unknown"."""
    broken = {e.id: e.problem for e in entries if e.problem}
    reasons, unknown = [], []
    for i in missing:
        folder = i.split("/", 1)[0]
        if folder in broken and folder != i:
            reasons.append(f"{i}: {broken[folder]}")
        else:
            unknown.append(i)
    parts = [f"cannot load task(s): {'; '.join(reasons)}"] if reasons else []
    if unknown:
        ids = [e.id for e in entries]
        named = ", ".join(i + did_you_mean(i, ids) for i in unknown)
        parts.append(f"unknown task id(s): {named} (run `labcoat list` to see the ids)")
    return "; ".join(parts)

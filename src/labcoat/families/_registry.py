"""The family registry: which families exist and how to find their tasks in a folder.

A family is a package whose `SPEC` (a `FamilySpec`) says what shared code needs of it;
registering one is one line in `FAMILY_MODULES` (or `register_family` for a family
outside labcoat: a plugin, a test's toy family)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.names import check_name, shown, unsafe_character
from labcoat._util.suggest import did_you_mean
from labcoat.families._entry import TaskEntry
from labcoat.families._spec import EvalChoices, FamilySpec

if TYPE_CHECKING:  # Inspect is imported only when a task runs (`labcoat list` stays fast)
    from inspect_ai import Task

# name -> the family's package, whose `SPEC` is its `FamilySpec`; in the order reports
# list the families. Imported lazily so `labcoat list` stays fast.
FAMILY_MODULES: dict[str, str] = {
    "rebench": "labcoat.families.rebench",
    "researchcodebench": "labcoat.families.researchcodebench",
    "paperbench": "labcoat.families.paperbench",
    "researchgym": "labcoat.families.researchgym",
}


def register_family(name: str, module: str) -> None:
    """Add a family whose package `module` defines `SPEC` (a family outside labcoat's
    tree: a plugin, a test's toy family). Its package is imported when first used."""
    if not name.isidentifier():  # a folder name in a suite and a metadata key
        raise LabcoatError(f"register_family: a family name is an identifier, not {name!r}")
    FAMILY_MODULES[name] = module


def family_names() -> list[str]:
    return list(FAMILY_MODULES)


def is_family(name: str) -> bool:
    return name in FAMILY_MODULES


def family_module(name: str) -> ModuleType:
    if name not in FAMILY_MODULES:
        known = ", ".join(FAMILY_MODULES)
        raise LabcoatError(
            f"unknown family '{name}'{did_you_mean(name, FAMILY_MODULES)} (known: {known})"
        )
    return importlib.import_module(FAMILY_MODULES[name])


def family_spec(name: str) -> FamilySpec:
    """The family's `FamilySpec` (its package's `SPEC`)."""
    module = family_module(name)
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, FamilySpec) or spec.name != name:
        raise LabcoatError(f"{module.__name__}: SPEC must be the FamilySpec named '{name}'")
    return spec


def eval_task_args(
    choices: EvalChoices, given: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each family's task arguments for `labcoat eval`'s choices (its spec's `eval_args`)
    from `given` (`-T`'s, by family); a family left as it was gets no entry."""
    args = {name: dict(values) for name, values in given.items()}
    for name in FAMILY_MODULES:
        mine = family_spec(name).eval_args(choices, args.get(name, {}))
        if mine or name in args:
            args[name] = mine
    return args


def task_function(name: str) -> Callable[..., Task]:
    """The family's Inspect @task."""
    return family_spec(name).task


def family_grader_version(name: str) -> dict[str, str]:
    """The version of the family's grader (`labcoat.grading.grader_version`)."""
    from labcoat.grading import grader_version  # imports Inspect: only when grading

    return grader_version(family_spec(name).code)


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
        spec = family_spec(name)
        # a suite folder holds one subfolder per family, each in that family's format
        nested = root / name
        folder = nested if nested.is_dir() else root
        try:
            found = spec.discover_in(folder, ids)
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

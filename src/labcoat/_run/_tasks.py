"""From a target and a selection to Inspect tasks, one per family and agent."""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from inspect_ai import Task

from labcoat._errors import LabcoatError
from labcoat._run._check import require_docker_engine
from labcoat._util.lfs import LFS_POINTERS, require_any_content
from labcoat.families import TaskEntry, discover, family_module, select, task_function
from labcoat.sandbox import bwrap_path, require_sandboxes
from labcoat.suites import resolve_target

NO_TASKS = (
    "no tasks found (expected METR task families, a ResearchCodeBench pset, PaperBench "
    "papers or ResearchGym task folders, or a suite holding them)"
)


def selected_entries(
    target: str,
    task_ids: list[str] | None,
    family: str | None,
    task_args: dict[str, dict[str, Any]] | None = None,
    *,
    runnable: bool = False,
) -> list[TaskEntry]:
    """The tasks of `target` chosen by id, family and the families' own task arguments
    (PaperBench's `split`), before any is run or reported.

    `runnable`: when every chosen task is broken by Git LFS pointers alone, nothing can
    run: one `NoContentError` line says so (not one failure per task).
    """
    found = discover(resolve_target(target), task_ids=task_ids)  # no other family's code runs
    entries = select(found, task_ids, family)
    if not entries:
        where = f" of family {family}" if family else ""
        raise LabcoatError(f"{target}: {NO_TASKS}{where}")
    for name, args in (task_args or {}).items():
        entries = _family_selection(name, found, entries, args)
    if runnable:
        families = "/".join(dict.fromkeys(e.family for e in entries))
        require_any_content(
            {e.path: e.extra.get(LFS_POINTERS) for e in entries}, f"{families} task"
        )
    return entries


def sole_family(target: str) -> str | None:
    """The family of every task of `target`, when they are all of one (so `-T` needs no
    `--family`); None when the target mixes families or holds none."""
    families = {e.family for e in discover(resolve_target(target))}
    return families.pop() if len(families) == 1 else None


def _family_selection(
    family: str, found: list[TaskEntry], entries: list[TaskEntry], args: dict[str, Any]
) -> list[TaskEntry]:
    """`entries` as the family's `select_entries(found, chosen, args)` narrows its own
    (e.g. to a split); a family without one takes its task arguments as they are."""
    hook = getattr(family_module(family), "select_entries", None)
    if hook is None:
        return entries
    own = [e for e in entries if e.family == family]
    chosen = hook([e for e in found if e.family == family], own, args)
    return [e for e in entries if e.family != family] + chosen


def build_tasks(
    target: str,
    entries: list[TaskEntry],
    agent: str,
    sandbox: str,
    task_args: dict[str, Any] | None = None,
) -> list[Task]:
    """One Inspect task per family, built by the family's registered @task function,
    so the log records exactly what `inspect eval labcoat/<family>` would."""
    if sandbox in ("bwrap", "docker"):
        # --sandbox docker grades in the same bwrap sandboxes on the host: it needs them too
        bwrap_path()  # one clear line now rather than a failed task later
        require_sandboxes()
    if sandbox == "docker":
        require_docker_engine()
    by_family: dict[str, list[str]] = defaultdict(list)
    for entry in entries:
        by_family[entry.family].append(entry.id)
    tasks = []
    for family, ids in by_family.items():
        tasks.append(
            task_function(family)(
                target=target,
                tasks=ids,
                agent=agent,
                sandbox=sandbox,
                **(task_args or {}).get(family, {}),
            )
        )
    return tasks


def default_log_dir(kind: str, target: str) -> str:
    name = Path(target).name if target not in ("mini",) else target
    return str(Path("logs") / f"{kind}-{name}")


def eval_log_dir(target: str, agent: str, model: str | None, **what: Any) -> str:
    """`logs/eval-<target>/<agent>[-<model>][-<hash>]`: one folder per distinct command.

    Inspect keeps one eval set per folder (another command's logs there are refused), and
    the same command again must find its own to resume. The hash covers what else makes
    a different eval set: the selection, -T arguments, epochs, model arguments and roles.
    """
    parts = [agent, *([model] if model else [])]
    slug = re.sub(r"[^A-Za-z0-9._=-]+", "-", "-".join(parts)).strip("-")
    given = {k: v for k, v in sorted(what.items()) if v}
    if given:
        digest = hashlib.sha256(json.dumps(given, sort_keys=True, default=str).encode())
        slug += "-" + digest.hexdigest()[:8]
    return str(Path(default_log_dir("eval", target)) / slug)

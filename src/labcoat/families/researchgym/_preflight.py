"""What `labcoat check` needs to know of a ResearchGym task folder.

Beyond what every task shares (loading, LFS pointers, environments, GPUs), a ResearchGym
folder can be missing its sub-task declarations (no `labcoat.yaml`, no overlay of
labcoat's that matches it), its grader script, or the `install.sh` its sidecar asks for.
"""

from __future__ import annotations

import shlex

from labcoat.families._entry import TaskEntry
from labcoat.families._preflight import Preflight
from labcoat.families.researchgym._folder import INSTALL, TaskFolder
from labcoat.families.researchgym._sidecar import SIDECAR, GradingSpec


def _grader_script_problem(folder: TaskFolder, command: str) -> str | None:
    """The script a `bash x.sh` / `python x.py` grading command names, if it is missing."""
    try:
        words = shlex.split(command)
    except ValueError as ex:
        return f"grader: grading.command {command!r} cannot be parsed: {ex}"
    if len(words) >= 2 and words[0] in ("bash", "sh", "python", "python3"):
        script = words[1]
        if not script.startswith("-") and not (folder.path / script).is_file():
            return f"grader: {folder.path / script} is missing (grading.command: {command})"
    return None


def preflight(entry: TaskEntry) -> Preflight:
    folder = TaskFolder(entry.path)
    sidecar = folder.sidecar
    problems = []
    if sidecar is None:
        mismatch = folder.overlay.mismatch
        problems.append(
            f"overlay: {mismatch}; sub-tasks undeclared, only a task-level self-reported score"
            if mismatch
            else f"sidecar: no {SIDECAR} and no labcoat overlay for this folder: sub-tasks "
            f"undeclared, only a task-level self-reported score"
        )
    grading = sidecar.grading if sidecar is not None else GradingSpec()
    script = _grader_script_problem(folder, grading.command)
    if script:
        problems.append(script)
    for name in grading.requires:
        if not (folder.path / name).exists():
            problems.append(
                f"grader: {folder.path / name} is missing; the grader needs it "
                f"(grading.requires), so grading will fail"
            )
    if sidecar is not None and sidecar.install and not (folder.path / INSTALL).is_file():
        problems.append(f"install: the sidecar asks to run {INSTALL}, which is missing")
    return Preflight(
        environments=[folder.environment],
        gpus=sidecar.resources.gpus if sidecar else 0,
        problems=problems,
    )

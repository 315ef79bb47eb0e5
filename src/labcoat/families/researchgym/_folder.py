"""A ResearchGym task folder on disk, and which of its files the agent may see."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from labcoat._util.text_file import read_text
from labcoat.families.researchgym._overlays import OverlayMatch, match_overlay
from labcoat.families.researchgym._sidecar import SIDECAR, Sidecar, load_sidecar
from labcoat.integrity import Blocklist, load_blocklist
from labcoat.sandbox import PythonEnv, read_requirements_file, specifiers

DESCRIPTION = "task_description.md"
IDEA_HINT = "idea_hint.txt"
BLOCKLIST = "blocked_urls.yaml"
INSTALL = "install.sh"
# Never in the agent's workspace: the grader, labcoat's sidecar (SOTA values), the idea
# hint (given only in the --idea-hint ablation) and the harness's blocklist.
ALWAYS_PROTECTED = ("grading", SIDECAR, IDEA_HINT, BLOCKLIST)
_SKIPPED = {"__pycache__", ".git"}
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class TaskFolder:
    """`task_description.md` + `grading/` + the code and data the agent starts from."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def _own_sidecar(self) -> Sidecar | None:
        return load_sidecar(self.path)

    @cached_property
    def overlay(self) -> OverlayMatch:
        """labcoat's overlay for this folder (used only without a labcoat.yaml)."""
        return match_overlay(self.path, self.description())

    @cached_property
    def sidecar(self) -> Sidecar | None:
        """The folder's labcoat.yaml, else labcoat's overlay whose identity matches."""
        own = self._own_sidecar
        if own is not None:
            return own
        overlay = self.overlay.overlay
        return overlay.sidecar() if overlay is not None else None

    @property
    def sidecar_origin(self) -> str | None:
        """Where the sub-task declarations come from: `labcoat.yaml`, `overlay <file>`."""
        if self._own_sidecar is not None:
            return SIDECAR
        if self.overlay.overlay is not None and self.overlay.file is not None:
            return f"overlay {self.overlay.file.name}"
        return None

    @cached_property
    def blocklist(self) -> Blocklist:
        return load_blocklist(self.path / BLOCKLIST)

    def description(self) -> str:
        return read_text(self.path / DESCRIPTION)

    def idea_hint(self) -> str | None:
        hint = self.path / IDEA_HINT
        return read_text(hint).strip() if hint.is_file() else None

    @property
    def title(self) -> str:
        if self.sidecar is not None and self.sidecar.title:
            return self.sidecar.title
        heading = _HEADING.search(self.description())
        return heading.group(1) if heading else self.name

    @property
    def environment(self) -> PythonEnv:
        """The sidecar's requirements, else the folder's requirements.txt (pip syntax)."""
        if self.sidecar is not None and self.sidecar.requirements is not None:
            return specifiers(*self.sidecar.requirements)
        req_file = self.path / "requirements.txt"
        return read_requirements_file(req_file) if req_file.is_file() else PythonEnv()

    @property
    def protected(self) -> tuple[str, ...]:
        extra: tuple[str, ...] = ()
        if self.sidecar is not None:
            extra = self.sidecar.protected
            if self.sidecar.oracle.files:
                extra += (self.sidecar.oracle.files,)
        return ALWAYS_PROTECTED + extra

    def is_protected(self, relative: Path) -> bool:
        return any(relative == Path(p) or Path(p) in relative.parents for p in self.protected)

    def copy_public(self, target: Path) -> None:
        """Copy what the agent starts from (everything not protected) into `target`."""
        for source in sorted(self.path.rglob("*")):
            relative = source.relative_to(self.path)
            if self.is_protected(relative) or _SKIPPED & set(relative.parts):
                continue
            destination = target / relative
            if source.is_dir() and not source.is_symlink():
                destination.mkdir(parents=True, exist_ok=True)
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination, follow_symlinks=False)


def is_task_folder(path: Path) -> bool:
    return (path / DESCRIPTION).is_file() and (path / "grading").is_dir()


def folder_problem(path: Path) -> str | None:
    """Why a folder that looks like a task (a description or a grader) cannot be one."""
    has_description = (path / DESCRIPTION).is_file()
    has_grader = (path / "grading").is_dir()
    if has_description and has_grader:
        return None
    if has_grader:
        return (
            f"{path / DESCRIPTION}: missing; the folder has a grader (grading/) but no "
            f"task description, so there is nothing to give the agent"
        )
    if has_description and (path / SIDECAR).is_file():
        return f"{path / 'grading'}: missing; the folder has a task description but no grader"
    return None


def looks_like_task(path: Path) -> bool:
    """A task folder, or one that is meant to be and is broken (reported, not skipped)."""
    if is_task_folder(path):
        return True
    return (path / "grading" / "grade.sh").is_file() or (
        (path / DESCRIPTION).is_file() and (path / SIDECAR).is_file()
    )


def find_task_dirs(root: Path) -> list[Path]:
    """The task folder at `root`, or those directly inside it (e.g. upstream `tasks/test`),
    broken ones included."""
    if not root.is_dir():
        return []
    if looks_like_task(root):
        return [root]
    return [p for p in sorted(root.iterdir()) if p.is_dir() and looks_like_task(p)]


def find_tasks(root: Path) -> list[TaskFolder]:
    """The loadable task folders at or directly inside `root`."""
    return [TaskFolder(p) for p in find_task_dirs(root) if is_task_folder(p)]

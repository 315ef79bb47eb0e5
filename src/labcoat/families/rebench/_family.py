"""METR task families on disk, and the task-standard operations run in protected sandboxes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from labcoat._errors import LabcoatError, TaskDataError
from labcoat.families.rebench import _driver
from labcoat.families.rebench._sidecar import SIDECAR, Sidecar, load_sidecar
from labcoat.grading import grader_session
from labcoat.sandbox import PythonEnv, read_requirements_file, specifiers

AGENT_HOME = "/home/agent"
DRIVER_TIMEOUT = 3600  # scoring may train a small model; upstream tasks may take long
_TASK_FAMILY_CLASS = re.compile(r"^class\s+TaskFamily\b", re.MULTILINE)


@dataclass(frozen=True)
class TaskFamilyDir:
    """A folder `<name>/<name>.py` defining `class TaskFamily`, plus labcoat's sidecar."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def sidecar(self) -> Sidecar | None:
        return load_sidecar(self.path)

    @property
    def environment(self) -> PythonEnv:
        """The sidecar's requirements, else the family's requirements.txt (pip installs it
        in the family's folder, as the task standard's image build does)."""
        if self.sidecar is not None and self.sidecar.requirements:
            return specifiers(*self.sidecar.requirements)
        req_file = self.path / "requirements.txt"
        return read_requirements_file(req_file) if req_file.is_file() else PythonEnv()


def is_task_family(path: Path) -> bool:
    module = path / f"{path.name}.py"
    return module.is_file() and bool(_TASK_FAMILY_CLASS.search(module.read_text(errors="replace")))


def find_families(root: Path) -> list[TaskFamilyDir]:
    """The family at `root`, or the families directly inside it."""
    if root.is_dir() and is_task_family(root):
        return [TaskFamilyDir(root)]
    if not root.is_dir():
        return []
    return [TaskFamilyDir(p) for p in sorted(root.iterdir()) if p.is_dir() and is_task_family(p)]


@dataclass(frozen=True)
class DriverRun:
    result: Any
    output: str
    """Everything the family printed (stdout then stderr), for the log."""


def _parse_driver_output(stdout: str) -> tuple[Any, str]:
    parts = stdout.rsplit(_driver.SEPARATOR, 2)
    if len(parts) != 3:
        raise ValueError("the driver printed no result")
    return json.loads(parts[1]), parts[0]


async def run_operation(
    family: TaskFamilyDir,
    operation: str,
    task: str | None = None,
    *,
    home: Path | None = None,
    home_writable: bool = False,
    submission: str = "",
    score_log: list[dict[str, Any]] | None = None,
    memory_mb: int | None = 4096,
    cpus: float | None = None,
) -> DriverRun:
    """Run a task-standard operation with the family's files as /root (protected).

    `home` is the agent's /home/agent on the host: writable for `start`, read-only for
    scoring. Errors in the family's code raise LabcoatError with its output.
    """
    args = [operation, family.name, *([task] if task else [])]
    args += ["--submission", submission, "--score-log", json.dumps(score_log or [])]
    async with grader_session(
        protected=family.path,
        workspace=home,
        workspace_target=AGENT_HOME,
        workspace_writable=home_writable,
        environment=family.environment,
        memory_mb=memory_mb,
        cpus=cpus,
    ) as session:
        user = "root" if "root" in session.users else None
        result = await session.exec(
            ["python3", "-c", Path(_driver.__file__).read_text(), *args],
            cwd="/root",
            user=user,
            timeout=DRIVER_TIMEOUT,
        )
    output = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr.strip() else "")
    if not result.success:
        missing = re.search(r"No module named '([\w.]+)'", output)
        if missing:
            raise TaskDataError(
                family.path / SIDECAR,
                "requirements",
                f"the family's code imports {missing.group(1)!r}, which its environment lacks: "
                "name the package here (or in a requirements.txt beside "
                f"{family.name}.py)",
            )
        raise LabcoatError(
            f"task family {family.name}: `{operation}` failed (exit {result.returncode}):\n"
            + _tail(output, 12)
        )
    try:
        value, printed = _parse_driver_output(result.stdout)
    except ValueError as ex:
        raise LabcoatError(
            f"task family {family.name}: `{operation}`: {ex}:\n{_tail(output)}"
        ) from None
    return DriverRun(value, printed + (f"\n[stderr]\n{result.stderr}" if result.stderr else ""))


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# The setup operation runs the family's code; cache it per family for this process.
_setup_cache: dict[tuple[Path, float], dict[str, Any]] = {}


async def family_setup(family: TaskFamilyDir) -> dict[str, Any]:
    """Task names, instructions and permissions, as the family's own code reports them."""
    key = (family.path, (family.path / f"{family.name}.py").stat().st_mtime)
    if key not in _setup_cache:
        run = await run_operation(family, "setup")
        _setup_cache[key] = run.result
        sidecar = family.sidecar
        if sidecar is not None:
            missing = sorted(set(sidecar.tasks) - set(run.result["tasks"]))
            if missing:
                raise TaskDataError(
                    family.path / SIDECAR,
                    f"tasks.{missing[0]}",
                    f"not a task of {family.name}.py (its tasks: {', '.join(run.result['tasks'])})",
                )
    return _setup_cache[key]

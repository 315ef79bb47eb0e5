"""METR task families on disk, and the task-standard operations run in protected sandboxes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.env import env_value
from labcoat._util.lfs import require_content
from labcoat.families.rebench import _driver
from labcoat.families.rebench._build import (
    BUILD_STEPS,
    FileStep,
    ShellStep,
    family_image,
    load_build_steps,
    system_path,
)
from labcoat.families.rebench._manifest import MANIFEST, Manifest, load_manifest
from labcoat.families.rebench._secrets import MissingSecretsError, declared_secrets, secret_values
from labcoat.families.rebench._sidecar import SIDECAR, Sidecar, load_sidecar
from labcoat.families.rebench._standard_package import with_standard_package
from labcoat.grading import grader_session
from labcoat.sandbox import (
    AGENT_HOME,
    Bind,
    ImageSpec,
    PythonEnv,
    built_image,
    ensure_image,
    read_requirements_file,
    specifiers,
)

DEFAULT_OPERATION_TIMEOUT = 3600  # scoring may train a small model; upstream tasks may take long
# the family's files labcoat reads itself (a Git LFS pointer there is named as such)
_FAMILY_FILES = (SIDECAR, MANIFEST, BUILD_STEPS, "requirements.txt")
_TASK_FAMILY_CLASS = re.compile(r"^class\s+TaskFamily\b", re.MULTILINE)


def operation_timeout(minutes: float | None = None) -> float:
    """Seconds one task operation may take: the task's own setting, else
    LABCOAT_TASK_OPERATION_TIMEOUT (seconds), else an hour."""
    if minutes is not None:
        return minutes * 60
    return float(env_value("LABCOAT_TASK_OPERATION_TIMEOUT", DEFAULT_OPERATION_TIMEOUT))


@dataclass(frozen=True)
class TaskFamilyDir:
    """A folder `<name>/<name>.py` defining `class TaskFamily`, with its optional
    manifest.yaml, build_steps.json, requirements.txt and labcoat's sidecar."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def module(self) -> Path:
        return self.path / f"{self.name}.py"

    @cached_property
    def sidecar(self) -> Sidecar | None:
        return load_sidecar(self.path)

    @cached_property
    def manifest(self) -> Manifest | None:
        return load_manifest(self.path)

    @cached_property
    def build_steps(self) -> list[FileStep | ShellStep]:
        return load_build_steps(self.path)

    @property
    def version(self) -> str | None:
        return str(self.manifest.version) if self.manifest and self.manifest.version else None

    @property
    def environment(self) -> PythonEnv:
        """The sidecar's requirements, else the family's requirements.txt (installed by pip
        itself, every line of pip's syntax), and `metr_task_standard` (the standard's image
        has it; labcoat's own, unless the family names one)."""
        if self.sidecar is not None and self.sidecar.requirements:
            env = specifiers(*self.sidecar.requirements)
        else:
            req_file = self.path / "requirements.txt"
            env = read_requirements_file(req_file) if req_file.is_file() else PythonEnv()
        return with_standard_package(env)

    @property
    def declared_secrets(self) -> list[str]:
        return declared_secrets(self.module)

    @cached_property
    def system(self) -> str:
        """Which system its samples run on, and why (`_build.system_path`)."""
        return system_path(self.name, self.path, self.build_steps)

    def image(self, secrets: dict[str, str] | None = None) -> ImageSpec | None:
        """The family's image (build steps, install()), or None when it needs none."""
        return family_image(self.name, self.path, self.environment, self.build_steps, secrets or {})

    def check(self) -> None:
        """Load every file labcoat reads; a broken one raises TaskDataError (a Git LFS
        pointer in place of one, LfsPointerError)."""
        require_content(self.path / name for name in _FAMILY_FILES)
        _ = self.sidecar, self.manifest, self.build_steps
        self.environment  # noqa: B018 - reads (and checks) requirements.txt


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


ONE_USER_NOTE = (
    " (labcoat runs without root here, so the sandbox has one user: a family that needs the"
    " task standard's root, `protected` group or /protected must be run by root)"
)


class OperationFailed(LabcoatError):
    """The family's code raised (or the operation timed out) while running."""

    def __init__(
        self,
        family: str,
        operation: str,
        why: str,
        output: str,
        *,
        exit_code: int | None = None,
        stdout: str = "",
        stderr: str = "",
    ) -> None:
        self.why = why
        self.output = output
        self.exit_code = exit_code
        """The driver's exit status when the operation ran to its end (None: timed out, or
        it printed no result)."""
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(f"task family {family}: `{operation}` {why}:\n{_tail(output, 12)}")


def _parse_driver_output(stdout: str) -> tuple[Any, str]:
    parts = stdout.rsplit(_driver.SEPARATOR, 2)
    if len(parts) != 3:
        raise ValueError("the driver printed no result")
    return json.loads(parts[1]), parts[0]


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


async def run_operation(
    family: TaskFamilyDir,
    operation: str,
    task: str | None = None,
    *,
    home: Path | None = None,
    home_writable: bool = False,
    state_binds: tuple[Bind, ...] = (),
    submission: str = "",
    score_log: list[dict[str, Any]] | None = None,
    memory_mb: int | None = 4096,
    cpus: float | None = None,
    gpus: int = 0,
    network: bool = False,
    secrets: dict[str, str] | None = None,
    timeout: float | None = None,
    with_image: bool = True,
) -> DriverRun:
    """Run a task-standard operation as root, in a protected sandbox with the family's
    image (or environment) and the family's files as /root.

    `home` is the agent's /home/agent on the host; `state_binds` the sample's own /root,
    /protected and /var/run/sample_uuid (without them, /root is a fresh copy of the
    family's files or image). A family that cannot be loaded raises TaskDataError; an
    error in its code, or a timeout, raises OperationFailed with its output. Without
    `with_image` it runs in the family's Python environment alone (nothing is built but
    the environment; install() does not run).
    """
    image = family.image(secrets) if with_image else None
    protected: Path | None = family.path
    if image is not None:
        built = built_image(image) or await ensure_image(image)
        protected = built.dirs["/root"]
    if any(b.target == "/root" for b in state_binds):
        protected = None
    args = [operation, family.name, *([task] if task else [])]
    env = {
        "TASK_FAMILY_NAME": family.name,
        **({"TASK_NAME": task, "TASK_ID": f"{family.name}/{task}"} if task else {}),
        **(secrets or {}),
    }
    limit = timeout if timeout is not None else operation_timeout()
    async with grader_session(
        protected=protected,
        workspace=home,
        workspace_target=AGENT_HOME,
        workspace_writable=home_writable,
        environment=family.environment,
        image=image,
        binds=state_binds,
        env=env,
        memory_mb=memory_mb,
        cpus=cpus,
        gpus=gpus,
        network=network,
    ) as session:
        if operation == "score":
            await session.write_file("/tmp/.labcoat-submission", submission)
            await session.write_file("/tmp/.labcoat-score-log.json", json.dumps(score_log or []))
            args += [
                "--submission-file",
                "/tmp/.labcoat-submission",
                "--score-log-file",
                "/tmp/.labcoat-score-log.json",
            ]
        user = "root" if "root" in session.users else None
        try:
            result = await session.exec(
                ["python3", "-c", Path(_driver.__file__).read_text(), *args],
                cwd="/root",
                user=user,
                timeout=limit,
            )
        except TimeoutError:
            raise OperationFailed(
                family.name, operation, f"timed out after {limit:g} s", ""
            ) from None
    output = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr.strip() else "")
    load_failed = result.returncode == _driver.LOAD_FAILED and last_line(result.stderr).startswith(
        _driver.LOAD_FAILED_MARK.strip()
    )
    if load_failed or (not result.success and operation in ("setup", "tasks", "install")):
        raise _load_error(family, operation, result.stderr or result.stdout, output)
    if not result.success:
        if operation == "start":
            _raise_if_missing_module(family, output)
        raise OperationFailed(
            family.name,
            operation,
            f"failed (exit {result.returncode}): {last_line(result.stderr or result.stdout)}"
            + (ONE_USER_NOTE if user is None else ""),
            output,
            exit_code=result.returncode,
            stdout=result.stdout,
            stderr=result.stderr,
        )
    try:
        value, printed = _parse_driver_output(result.stdout)
    except ValueError as ex:
        raise OperationFailed(family.name, operation, str(ex), output) from None
    return DriverRun(value, printed + (f"\n[stderr]\n{result.stderr}" if result.stderr else ""))


def _raise_if_missing_module(family: TaskFamilyDir, output: str) -> None:
    missing = re.search(r"No module named '([\w.]+)'", output)
    if missing:
        raise TaskDataError(
            family.module,
            None,
            f"the family's code imports {missing.group(1)!r}, which its environment lacks: "
            f"name it in requirements.txt (or the sidecar's `requirements`)",
        )


def _load_error(family: TaskFamilyDir, operation: str, text: str, output: str) -> LabcoatError:
    _raise_if_missing_module(family, output)
    reason = last_line(text).removeprefix(_driver.LOAD_FAILED_MARK)
    return TaskDataError(family.module, None, f"`{operation}` failed: {reason}")


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# The setup operation runs the family's code; cache it per family for this process.
_setup_cache: dict[tuple[Path, float, str], dict[str, Any]] = {}


async def family_setup(family: TaskFamilyDir) -> dict[str, Any]:
    """Task names, instructions, permissions and what the family defines, as the family's
    own code reports them (with its required environment variables set, as far as they
    are available; `missing_secrets` names the others)."""
    names = family.declared_secrets
    secrets, missing = secret_values(names)
    if missing:
        # install() and the family's code may need them: don't build or run anything
        raise MissingSecretsError(f"task family {family.name}", missing)
    image = family.image(secrets)
    stamp = image.model_dump_json() if image is not None else family.environment.model_dump_json()
    key = (family.path, family.module.stat().st_mtime, stamp)
    if key not in _setup_cache:
        run = await run_operation(family, "setup", secrets=secrets)
        result = run.result
        wanted = list(result["required_environment_variables"])
        if set(wanted) - set(names):  # declared in a way the source doesn't show
            more, missing = secret_values(wanted)
            if missing:
                raise MissingSecretsError(f"task family {family.name}", missing)
            if more != secrets:
                result = (await run_operation(family, "setup", secrets=more)).result
        _setup_cache[key] = result
        sidecar = family.sidecar
        if sidecar is not None:
            absent = sorted(set(sidecar.tasks) - set(result["tasks"]))
            if absent:
                raise TaskDataError(
                    family.path / SIDECAR,
                    f"tasks.{absent[0]}",
                    f"not a task of {family.name}.py (its tasks: {', '.join(result['tasks'])})",
                )
    return _setup_cache[key]


# get_tasks() run for listing, per family, for this process: its result or its error
_listing_cache: dict[tuple[Path, float, str], dict[str, Any] | LabcoatError] = {}


def _listing_key(family: TaskFamilyDir) -> tuple[Path, float, str]:
    return (family.path, family.module.stat().st_mtime, family.environment.model_dump_json())


def listing_known(family: TaskFamilyDir) -> bool:
    """Whether family_listing() has its answer already (nothing would run)."""
    return _listing_key(family) in _listing_cache


async def family_listing(family: TaskFamilyDir) -> dict[str, Any]:
    """`{"tasks": [...], "aux_vm": [...]}` from get_tasks() (and get_aux_vm_spec()) run in
    the family's Python environment alone: no image is built and install() does not run,
    so listing costs at most an environment (cached). A family whose get_tasks() needs
    what install() makes fails here; the caller decides what then."""
    secrets, missing = secret_values(family.declared_secrets)
    if missing:  # the family's code may need them: run nothing
        raise MissingSecretsError(f"task family {family.name}", missing)
    key = _listing_key(family)
    if key not in _listing_cache:
        try:
            run = await run_operation(family, "tasks", secrets=secrets, with_image=False)
            _listing_cache[key] = run.result
        except LabcoatError as ex:
            _listing_cache[key] = ex
    found = _listing_cache[key]
    if isinstance(found, LabcoatError):
        raise found
    return found


def family_secrets(
    family: TaskFamilyDir, names: list[str], files: tuple[Path, ...] = ()
) -> dict[str, str]:
    """The values of `names` (also from `files`); a missing one is an error naming it."""
    found, missing = secret_values(names, files)
    if missing:
        raise MissingSecretsError(f"task family {family.name}", missing)
    return found

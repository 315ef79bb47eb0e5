"""Task environments: one virtual environment per requirements set, built by pip, cached.

An environment is a venv made by Python's own `venv` module and filled by pip itself
from the task's requirement lines (`pip install -r`), with every option pip has. Both
run inside a build sandbox (host network, nothing of the host's files but the pip
configuration, the task's local paths and labcoat's pip cache), where the venv lives at
the path task sandboxes mount it on (/opt/labcoat/env): its interpreter link, its
`pyvenv.cfg` and its scripts' `#!` lines are right there without rewriting. A sandbox
then sees the packages of its own environment and nothing else of the host's.

Requirements the harness's own installation already satisfies (numpy, through
inspect-ai) are linked from there instead: no network, no second copy. Large files that
several environments share (a torch wheel's libraries) are hard links to one copy.

A requirement that cannot be installed fails that environment alone, with pip's reason
in one line and pip's whole output in a log file; nothing half-built stays behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import json
import logging
import os
import re
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from labcoat.sandbox._base_python import PTH_FILE, task_python_paths
from labcoat.sandbox._build import (
    EnvironmentBuildError,
    build_config,
    build_once,
    build_session,
    build_timeout,
    dedupe,
)
from labcoat.sandbox._built import BuiltEnvironment
from labcoat.sandbox._config import Bind
from labcoat.sandbox._gpus import machine_has_gpu
from labcoat.sandbox._layout import Isolation, cache_dir, isolation
from labcoat.sandbox._paths import PIP_MOUNT, SANDBOX_ENV
from labcoat.sandbox._pip_adapt import (
    closest_available,
    index_reachable,
    without_accelerator,
    without_unreachable_indexes,
)
from labcoat.sandbox._requirements import PythonEnv
from labcoat.sandbox._resolver import DATE_OPTION, date_refusal, resolution_key
from labcoat.sandbox._rootfs import BuiltSystem
from labcoat.sandbox._session import SandboxSession

logger = logging.getLogger(__name__)

ENV_FORMAT = "4"  # bump when the layout of a built environment changes
RECORD = "labcoat-env.json"
REQUIREMENTS_COPY = "labcoat-requirements.txt"
BUILD_LOG = "labcoat-build.log"
MAX_VERSION_RETRIES = 5
_OWN_INDEX = ("--no-index", "--index-url", "-i ", "-i=")
"""Requirement lines that replace the host's index (whether it is reachable is moot)."""


def envs_dir() -> Path:
    return cache_dir() / "envs"


def environment_key(env: PythonEnv, system: BuiltSystem | None = None) -> str:
    """The environment's key: its requirements, how they resolve here, and the Python it
    is made with (labcoat's own, or a system root's: `system`)."""
    text = "\n".join(
        [
            ENV_FORMAT,
            f"system {system.key}" if system else sys.version,
            sys.platform,
            "gpu" if machine_has_gpu() else "cpu",
            env.content_digest(),
            resolution_key(),
            *task_python_paths(),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def built_environment(env: PythonEnv, system: BuiltSystem | None = None) -> BuiltEnvironment | None:
    """The environment when it is already built (no building, no waiting)."""
    path = envs_dir() / environment_key(env, system)
    return _load(path) if (path / ".complete").exists() else None


def _load(path: Path) -> BuiltEnvironment:
    record = json.loads((path / RECORD).read_text())
    return BuiltEnvironment(
        path,
        record["source"],
        tuple(record.get("notes", ())),
        tuple(record.get("host_paths", ())),
    )


# failures are remembered for this process: every sample of a task would rebuild otherwise
_failures: dict[str, EnvironmentBuildError] = {}
_key_locks: dict[str, anyio.Lock] = {}


async def ensure_environment(env: PythonEnv, system: BuiltSystem | None = None) -> BuiltEnvironment:
    """The built environment for `env`, building it first if needed (once per machine);
    with `system`, made by that root file system's Python, in it."""
    key = environment_key(env, system)
    return await build_once(
        envs_dir(), key, _load, lambda path: _build(env, key, path, system), _failures, _key_locks
    )


async def _build(
    env: PythonEnv, key: str, path: Path, system: BuiltSystem | None = None
) -> BuiltEnvironment:
    refusal = date_refusal(env.uploaded_prior_to) if env.uploaded_prior_to else None
    if refusal:  # an old pip would resolve to today's releases: no environment, a reason
        raise EnvironmentBuildError(env, refusal, None)
    staging = envs_dir() / f"{key}.building-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        lines, notes = env.requirements, []
        if lines and not machine_has_gpu():
            lines, changed = without_accelerator(lines)
            notes += changed
        if lines:
            lines, unreachable = await anyio.to_thread.run_sync(without_unreachable_indexes, lines)
            notes += unreachable
        wanted = env.python
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        if (
            wanted
            and not system
            and not running.startswith(wanted)
            and not wanted.startswith(running)
        ):
            notes.append(f"the task names Python {wanted}; sandboxes run Python {running}")
        host_paths = () if system else task_python_paths()  # built for labcoat's Python
        # with a task interpreter, pip decides: what it has counts as installed, with no
        # copy of it (a 4.7 GB torch closure linked from the harness is a copy across disks)
        # (never into a system root's Python: the harness's packages are built for ours)
        harness = _harness_closure(lines) if lines and not host_paths and not system else None
        source = "empty" if not lines else ("harness" if harness is not None else "pip")
        async with _BuildSandbox.open(staging, env, host_paths, system) as box:
            await box.create_venv()
            _add_pip(staging)
            _add_task_python(staging, host_paths)
            if harness is not None:
                _link_from_harness(harness, _site_packages(staging))
            elif lines:
                # no index here: pip's retries (5, backing off) would only delay its failure
                own_index = any(line.startswith(_OWN_INDEX) for line in lines)
                offline = not own_index and not await anyio.to_thread.run_sync(index_reachable)
                lines, retried = await _pip_install(box, env, lines, staging, offline)
                notes += retried
        await anyio.to_thread.run_sync(dedupe, staging)
        for note in notes:
            logger.warning("environment %s: %s", key, note)
        (staging / REQUIREMENTS_COPY).write_text("".join(f"{line}\n" for line in lines))
        record = {
            "key": key,
            "source": source,
            "notes": notes,
            "requirements": list(env.requirements),
            "installed": list(lines),
            "sources": list(env.sources),
            "python": env.python,
            "host_paths": list(host_paths),
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (staging / RECORD).write_text(json.dumps(record, indent=2))
        (staging / ".complete").write_text("")
        shutil.rmtree(path, ignore_errors=True)
        staging.rename(path)
        return BuiltEnvironment(path, source, tuple(notes), host_paths)
    finally:
        if staging.exists():
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(staging, ignore_errors=True))


async def _pip_install(
    box: _BuildSandbox, env: PythonEnv, lines: tuple[str, ...], staging: Path, offline: bool
) -> tuple[tuple[str, ...], list[str]]:
    """pip install -r the lines; a missing pinned version moves to the closest one.
    `offline`: pip's index cannot be reached from here (pip tries each source once)."""
    notes: list[str] = []
    for _ in range(MAX_VERSION_RETRIES + 1):
        (staging / REQUIREMENTS_COPY).write_text("".join(f"{line}\n" for line in lines))
        ok, output = await box.pip_install(retries=0 if offline else None)
        if ok:
            return lines, notes
        retry = closest_available(lines, output)
        if retry is None:
            break
        lines, note = retry
        notes.append(note)
        logger.warning("environment: %s; trying again", note)
    log = envs_dir() / f"{staging.name.split('.')[0]}.failed.log"
    log.write_text(output)
    where = " (pip's index cannot be reached from this machine)" if offline else ""
    raise EnvironmentBuildError(env, pip_reason(output) + where, log)


def pip_reason(output: str) -> str:
    """The one line of pip's output that says why it failed."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for pattern in (
        r"^ERROR: (Could not find a version|No matching distribution|Could not install)",
        r"^fatal: ",
        r"^ERROR: (?!Exception|ResolutionImpossible)",
        r"^error: ",
    ):
        for line in lines:
            if re.search(pattern, line):
                if line.startswith("ERROR: Cannot install") or line.startswith("error: subprocess"):
                    continue
                return line.removeprefix("ERROR: ")
    conflict = [line for line in lines if line.startswith("The user requested")]
    if conflict:
        return "conflicting requirements: " + "; ".join(conflict)
    return lines[-1] if lines else "pip failed without saying why"


class _BuildSandbox:
    """A sandbox with the host's network in which the venv is made and pip runs."""

    def __init__(self, session: SandboxSession, env: PythonEnv) -> None:
        self.session = session
        self.env = env

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        staging: Path,
        env: PythonEnv,
        host_paths: tuple[str, ...],
        system: BuiltSystem | None = None,
    ) -> AsyncIterator[_BuildSandbox]:
        binds = [
            Bind(source=str(staging), target=SANDBOX_ENV, writable=True),
            Bind(source=str(Path(_pip_package())), target=f"{PIP_MOUNT}/pip"),
        ]
        local = [*env.local_paths(), *map(Path, host_paths)]
        # a venv is mounted read-only wherever it is used: its owner guards nothing, and
        # rootless the agent is the harness's own user, who can link into it and remove it
        config = build_config("/tmp", binds, local, {}, as_root=isolation() is Isolation.ROOT)
        if system is not None:
            config = config.model_copy(update={"system_root": str(system.tree)})
        async with build_session(config) as session:
            yield cls(session, env)

    async def _run(self, script: str) -> tuple[bool, str]:
        timeout = build_timeout()
        try:
            result = await self.session.exec(["/bin/sh", "-c", script], timeout=timeout)
        except TimeoutError:
            return False, f"ERROR: building the environment took more than {timeout} s"
        return result.success, result.stdout + result.stderr

    async def create_venv(self) -> None:
        # the interpreter's own path, not a link to it: the venv's `home` and its
        # bin/python must not point at /opt/labcoat/bin, which links back to the venv
        python = self.session.python.sandbox_executable
        # system site-packages "included" so that user installs (`pip install --user`)
        # work as on any machine: every sandbox hides the interpreter's own site-packages
        # without pip: `venv` would need ensurepip, which many systems' Pythons lack (Debian's
        # without python3-venv); the harness's own pip goes in instead (_add_pip)
        command = f"{python} -I -m venv --without-pip --system-site-packages {SANDBOX_ENV}"
        ok, output = await self._run(command)
        if not ok:
            raise EnvironmentBuildError(
                self.env, f"python -m venv failed: {pip_reason(output)}", None
            )

    async def pip_install(self, retries: int | None = None) -> tuple[bool, str]:
        log = f"{SANDBOX_ENV}/{BUILD_LOG}"
        # the date as an option, not a variable: a pip without it fails instead of ignoring it
        date = self.env.uploaded_prior_to
        as_of = f"{DATE_OPTION} {shlex.quote(date)} " if date else ""
        tries = f"--retries {retries} " if retries is not None else ""
        ok, output = await self._run(
            f"{SANDBOX_ENV}/bin/python {PIP_MOUNT}/pip install --no-input "
            "--disable-pip-version-check --root-user-action=ignore --progress-bar off "
            f"{tries}{as_of}-r {SANDBOX_ENV}/{REQUIREMENTS_COPY} > {log} 2>&1; status=$?; "
            f"cat {log}; exit $status"
        )
        return ok, output


PIP_SCRIPT = f"""#!{SANDBOX_ENV}/bin/python
import sys
from pip._internal.cli.main import main
if __name__ == "__main__":
    sys.exit(main())
"""


def _add_pip(venv: Path) -> None:
    """The harness's pip in the venv, as ensurepip would put it: the package (hard links)
    and its `pip`, `pip3`, `pip3.X` commands."""
    site = _site_packages(venv)
    _link_from_harness([md.distribution("pip")], site)
    version = site.parent.name.removeprefix("python")
    for name in ("pip", "pip3", f"pip{version}"):
        script = venv / "bin" / name
        script.write_text(PIP_SCRIPT)
        script.chmod(0o755)


def _add_task_python(venv: Path, host_paths: tuple[str, ...]) -> None:
    """LABCOAT_TASK_PYTHON's packages, seen through a .pth file (see _base_python)."""
    if host_paths:
        (_site_packages(venv) / PTH_FILE).write_text("".join(f"{p}\n" for p in host_paths))


def _pip_package() -> str:
    import pip

    return os.path.dirname(pip.__file__)


def _site_packages(venv: Path) -> Path:
    """The venv's site-packages (made by labcoat's Python or a system root's)."""
    found = sorted((venv / "lib").glob("python3*/site-packages"))
    if found:
        return found[0]
    return (
        venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    )


# --- requirements the harness already satisfies ------------------------------------------


# options that say where packages come from, not which: irrelevant when none is fetched
_SOURCE_OPTIONS = (
    "-i",
    "--index-url",
    "--extra-index-url",
    "--no-index",
    "-f",
    "--find-links",
    "--trusted-host",
    "--prefer-binary",
    "--only-binary",
    "--no-binary",
)


def _harness_closure(lines: tuple[str, ...]) -> list[md.Distribution] | None:
    """The harness's installed distributions that satisfy plain requirement lines (and
    their dependencies); None when any line is more than a plain requirement (or an
    option naming where packages come from), or when something is missing or at
    another version."""
    requirements = []
    for line in lines:
        if line.split("=", 1)[0].split()[0] in _SOURCE_OPTIONS:
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            return None
        if requirement.url:
            return None
        requirements.append(requirement)
    seen: dict[str, md.Distribution] = {}
    pending = list(requirements)
    while pending:
        req = pending.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = canonicalize_name(req.name)
        if key in seen:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            return None
        if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
            return None
        if dist.files is None or _is_editable(dist):
            return None
        seen[key] = dist
        wanted_extras = {*req.extras, ""}
        for dep in dist.requires or []:
            dep_req = Requirement(dep)
            if dep_req.marker is None or any(
                dep_req.marker.evaluate({"extra": extra}) for extra in wanted_extras
            ):
                dep_req.marker = None
                pending.append(dep_req)
    return list(seen.values())


def _is_editable(dist: md.Distribution) -> bool:
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        return bool(json.loads(text).get("dir_info", {}).get("editable"))
    except ValueError:
        return False


def _link_from_harness(dists: list[md.Distribution], site: Path) -> None:
    for dist in dists:
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file)))
            # only what lives in site-packages; console scripts point at the harness python
            if file.parts[0] == ".." or not source.is_file():
                continue
            _link_or_copy(source, site / file)


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)

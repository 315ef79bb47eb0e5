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
import fcntl
import functools
import glob
import hashlib
import importlib.metadata as md
import json
import logging
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from labcoat._errors import LabcoatError
from labcoat.sandbox._pip_adapt import (
    closest_available,
    without_accelerator,
    without_unreachable_indexes,
)
from labcoat.sandbox._pip_config import host_pip_config
from labcoat.sandbox._requirements import PythonEnv

logger = logging.getLogger(__name__)
T = TypeVar("T")

ENV_FORMAT = "3"  # bump when the layout of a built environment changes
SANDBOX_ENV = "/opt/labcoat/env"
PIP_MOUNT = "/opt/labcoat/pip"  # holds only the harness's `pip` package
PIP_CACHE_MOUNT = "/opt/labcoat/pip-cache"
RECORD = "labcoat-env.json"
REQUIREMENTS_COPY = "labcoat-requirements.txt"
BUILD_LOG = "labcoat-build.log"
DEFAULT_BUILD_TIMEOUT = 3600
MAX_VERSION_RETRIES = 5
DEDUPE_MIN_BYTES = 256 * 1024


class EnvironmentBuildError(LabcoatError):
    """A task's Python environment cannot be built here; the task is unavailable."""

    def __init__(self, env: PythonEnv, reason: str, log: Path | None) -> None:
        self.reason = reason
        self.log = log
        where = f" (pip's output: {log})" if log else ""
        super().__init__(f"environment unavailable: {reason} [{env.describe()}]{where}")


@dataclass(frozen=True)
class BuiltEnvironment:
    path: Path
    source: str
    """`empty`, `harness` (linked from labcoat's own installation) or `pip`."""
    notes: tuple[str, ...]
    """What was changed to install here (a CPU build for a CUDA one, a closer version)."""


def cache_dir() -> Path:
    root = os.environ.get("LABCOAT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "labcoat"
    )
    return Path(root)


def envs_dir() -> Path:
    return cache_dir() / "envs"


@functools.cache
def machine_has_gpu() -> bool:
    """NVIDIA device nodes present, unless LABCOAT_GPUS=1 or 0 says otherwise (a GPU labcoat
    cannot see as /dev/nvidia*, or a test cluster's node that declares one)."""
    declared = os.environ.get("LABCOAT_GPUS")
    if declared in ("0", "1"):
        return declared == "1"
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def environment_key(env: PythonEnv) -> str:
    text = "\n".join(
        [
            ENV_FORMAT,
            sys.version,
            sys.platform,
            "gpu" if machine_has_gpu() else "cpu",
            env.content_digest(),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def built_environment(env: PythonEnv) -> BuiltEnvironment | None:
    """The environment when it is already built (no building, no waiting)."""
    path = envs_dir() / environment_key(env)
    return _load(path) if (path / ".complete").exists() else None


def _load(path: Path) -> BuiltEnvironment:
    record = json.loads((path / RECORD).read_text())
    return BuiltEnvironment(path, record["source"], tuple(record.get("notes", ())))


# failures are remembered for this process: every sample of a task would rebuild otherwise
_failures: dict[str, EnvironmentBuildError] = {}
_key_locks: dict[str, anyio.Lock] = {}


async def ensure_environment(env: PythonEnv) -> BuiltEnvironment:
    """The built environment for `env`, building it first if needed (once per machine)."""
    key = environment_key(env)
    return await build_once(
        envs_dir(), key, _load, lambda path: _build(env, key, path), _failures, _key_locks
    )


async def build_once(
    folder: Path,
    key: str,
    load: Callable[[Path], T],
    build: Callable[[Path], Awaitable[T]],
    failures: dict[str, EnvironmentBuildError],
    locks: dict[str, anyio.Lock],
) -> T:
    """`load(folder/key)` when that is built (it holds `.complete`), else `build(folder/key)`:
    one builder per key across processes (a file lock) and within this one (an anyio
    lock). A build's `EnvironmentBuildError` is kept in `failures` and raised again."""
    path = folder / key
    if (path / ".complete").exists():
        return load(path)
    if key in failures:
        raise failures[key]
    async with locks.setdefault(key, anyio.Lock()):
        if key in failures:
            raise failures[key]
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / f"{key}.lock", "w")  # noqa: SIM115 - held while building
        try:
            # another process may be building the same thing
            await anyio.to_thread.run_sync(fcntl.flock, handle, fcntl.LOCK_EX)
            if (path / ".complete").exists():
                return load(path)
            try:
                return await build(path)
            except EnvironmentBuildError as exc:
                failures[key] = exc
                raise
        finally:
            handle.close()


async def _build(env: PythonEnv, key: str, path: Path) -> BuiltEnvironment:
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
        if wanted and not running.startswith(wanted) and not wanted.startswith(running):
            notes.append(f"the task names Python {wanted}; sandboxes run Python {running}")
        harness = _harness_closure(lines) if lines else None
        source = "empty" if not lines else ("harness" if harness is not None else "pip")
        async with _BuildSandbox.open(staging, env) as box:
            await box.create_venv()
            if harness is not None:
                _link_from_harness(harness, _site_packages(staging))
            elif lines:
                lines, retried = await _pip_install(box, env, lines, staging)
                notes += retried
        await anyio.to_thread.run_sync(_dedupe, staging)
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
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (staging / RECORD).write_text(json.dumps(record, indent=2))
        (staging / ".complete").write_text("")
        shutil.rmtree(path, ignore_errors=True)
        staging.rename(path)
        return BuiltEnvironment(path, source, tuple(notes))
    finally:
        if staging.exists():
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(staging, ignore_errors=True))


async def _pip_install(
    box: _BuildSandbox, env: PythonEnv, lines: tuple[str, ...], staging: Path
) -> tuple[tuple[str, ...], list[str]]:
    """pip install -r the lines; a missing pinned version moves to the closest one."""
    notes: list[str] = []
    for _ in range(MAX_VERSION_RETRIES + 1):
        (staging / REQUIREMENTS_COPY).write_text("".join(f"{line}\n" for line in lines))
        ok, output = await box.pip_install()
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
    raise EnvironmentBuildError(env, pip_reason(output), log)


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

    def __init__(self, session: object, env: PythonEnv) -> None:
        self.session = session
        self.env = env

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, staging: Path, env: PythonEnv):  # type: ignore[no-untyped-def]
        from labcoat.sandbox._command import privileged
        from labcoat.sandbox._config import Bind, BwrapConfig
        from labcoat.sandbox._session import BwrapSession

        pip_config = host_pip_config()
        pip_cache = cache_dir() / "pip"
        pip_cache.mkdir(parents=True, exist_ok=True)
        binds = [
            Bind(source=str(staging), target=SANDBOX_ENV, writable=True),
            Bind(source=str(Path(_pip_package())), target=f"{PIP_MOUNT}/pip"),
            Bind(source=str(pip_cache), target=PIP_CACHE_MOUNT, writable=True),
        ]
        seen = {b.target for b in binds}
        for path in [*pip_config.paths, *env.local_paths()]:
            if str(path) not in seen and not str(path).startswith(("/usr/", "/proc")):
                binds.append(Bind(source=str(path), target=str(path)))
                seen.add(str(path))
        config = BwrapConfig(
            environment=None,
            workdir="/tmp",
            network=True,
            network_mode="host",
            memory_mb=None,
            pids=4096,
            file_size_mb=None,
            binds=tuple(binds),
            env={
                **pip_config.variables,
                "PIP_CACHE_DIR": PIP_CACHE_MOUNT,
                **(
                    {"PIP_UPLOADED_PRIOR_TO": env.uploaded_prior_to}
                    if env.uploaded_prior_to
                    else {}
                ),
            },
            default_user="root" if privileged() else "agent",
        )
        session = await BwrapSession.create(config)
        try:
            yield cls(session, env)
        finally:
            with anyio.CancelScope(shield=True):
                await session.close()

    async def _run(self, script: str) -> tuple[bool, str]:
        timeout = int(os.environ.get("LABCOAT_ENV_BUILD_TIMEOUT", DEFAULT_BUILD_TIMEOUT))
        try:
            result = await self.session.exec(  # type: ignore[attr-defined]
                ["/bin/sh", "-c", script], timeout=timeout
            )
        except TimeoutError:
            return False, f"ERROR: building the environment took more than {timeout} s"
        return result.success, result.stdout + result.stderr

    async def create_venv(self) -> None:
        # the interpreter's own path, not a link to it: the venv's `home` and its
        # bin/python must not point at /opt/labcoat/bin, which links back to the venv
        python = self.session.python.sandbox_executable  # type: ignore[attr-defined]
        # system site-packages "included" so that user installs (`pip install --user`)
        # work as on any machine: every sandbox hides the interpreter's own site-packages
        ok, output = await self._run(f"{python} -I -m venv --system-site-packages {SANDBOX_ENV}")
        if not ok:
            raise EnvironmentBuildError(
                self.env, f"python -m venv failed: {pip_reason(output)}", None
            )

    async def pip_install(self) -> tuple[bool, str]:
        log = f"{SANDBOX_ENV}/{BUILD_LOG}"
        ok, output = await self._run(
            f"{SANDBOX_ENV}/bin/python {PIP_MOUNT}/pip install --no-input "
            "--disable-pip-version-check --root-user-action=ignore --progress-bar off "
            f"-r {SANDBOX_ENV}/{REQUIREMENTS_COPY} > {log} 2>&1; status=$?; cat {log}; "
            "exit $status"
        )
        return ok, output


def _pip_package() -> str:
    import pip

    return os.path.dirname(pip.__file__)


def _site_packages(venv: Path) -> Path:
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


# --- one copy of large files shared by several environments -----------------------------


def _dedupe(venv: Path) -> None:
    store = envs_dir() / ".files"
    store.mkdir(exist_ok=True)
    for root, _, files in os.walk(venv):
        for name in files:
            path = Path(root, name)
            try:
                st = path.lstat()
            except OSError:
                continue
            if not path.is_file() or path.is_symlink() or st.st_size < DEDUPE_MIN_BYTES:
                continue
            digest = _file_digest(path)
            stored = store / digest
            try:
                if stored.exists():
                    temp = path.with_name(f".{name}.labcoat-link")
                    os.link(stored, temp)
                    os.replace(temp, path)
                else:
                    os.link(path, stored)
            except OSError:
                continue  # another filesystem, or a race: keep this copy


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

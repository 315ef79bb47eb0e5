"""Task images: a task's environment plus what its build steps leave behind, built once.

Some task formats prepare a machine before any sample starts: METR task families copy
files and run shell commands (`build_steps.json`) and call `TaskFamily.install()` as root,
with the network, in an image that every run of the family then starts from. An image
here is the same idea without Docker: a copy of the task's Python environment (the
`PythonEnv`, built as usual) and a few named directories (`/root`, `/home/agent`, ...),
changed by the steps in a build sandbox and kept, keyed by their content:

    images/<key>/venv            the environment after the steps (pip installs land here)
    images/<key>/dirs/<name>     each kept directory (e.g. dirs/root for /root)

Sandboxes mount the image's environment read-only at /opt/labcoat/env, like any other
environment (`BwrapConfig.image`); whoever starts a sample copies the kept directories
it needs (`ensure_image(spec).dirs`). A step that fails makes the image unavailable with
its one-line reason (`EnvironmentBuildError`); the whole output is kept in a log file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import BaseModel, Field, field_validator

from labcoat._errors import LabcoatError
from labcoat.sandbox._environment import (
    DEFAULT_BUILD_TIMEOUT,
    PIP_CACHE_MOUNT,
    SANDBOX_ENV,
    EnvironmentBuildError,
    _dedupe,
    build_once,
    cache_dir,
    ensure_environment,
    environment_key,
)
from labcoat.sandbox._pip_config import host_pip_config
from labcoat.sandbox._requirements import PythonEnv

logger = logging.getLogger(__name__)

IMAGE_FORMAT = "1"  # bump when the layout of a built image changes
RECORD = "labcoat-image.json"
BUILD_CONTEXT = "/opt/labcoat/context"
# directories a build may never keep: the system tree is the host's, /tmp is per sandbox
_NOT_KEEPABLE = (
    "/",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/etc",
    "/proc",
    "/dev",
    "/tmp",
    "/var/tmp",
    "/run",
    "/opt/labcoat",
)


class ImageBuildError(EnvironmentBuildError):
    """A build step failed: the image (and every task using it) is unavailable here."""

    def __init__(self, reason: str, log: Path | None) -> None:
        self.reason = reason
        self.log = log
        where = f" (build output: {log})" if log else ""
        LabcoatError.__init__(self, f"environment unavailable: {reason}{where}")


class ImageStep(BaseModel, frozen=True):
    """One command run as root in the build sandbox (a failing step stops the build)."""

    label: str
    """How messages name the step, e.g. `build_steps.json[2] (shell)`."""
    argv: tuple[str, ...]
    cwd: str = "/root"


class ImageSpec(BaseModel, frozen=True):
    """What an image is made of; equal specs (and secret values) give the same image."""

    name: str
    """For messages and the image's record (a task family's name, say)."""
    environment: PythonEnv = PythonEnv()
    """The Python environment the steps start from (built first, as usual)."""
    root_source: str | None = None
    """A host folder whose contents start as /root (the task family's files)."""
    context: str | None = None
    """A host folder the steps see read-only at /opt/labcoat/context (what a Dockerfile's
    COPY copies from)."""
    keep: tuple[str, ...] = ("/root", "/home/agent")
    """Sandbox directories the steps may write and the image keeps, besides the
    environment. Writes anywhere else fail: the system tree is read-only."""
    steps: tuple[ImageStep, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Variables every step sees."""
    secrets: dict[str, str] = Field(default_factory=dict, exclude=True, repr=False)
    """Variables every step sees that must not be written anywhere (never serialized;
    only a digest of them enters the image's key)."""

    @field_validator("keep")
    @classmethod
    def _keepable(cls, keep: tuple[str, ...]) -> tuple[str, ...]:
        for path in keep:
            if not path.startswith("/") or path.rstrip("/") in _NOT_KEEPABLE:
                raise ValueError(f"an image cannot keep {path!r}")
        return keep

    def __hash__(self) -> int:
        return hash(self.model_dump_json())


@dataclass(frozen=True)
class BuiltImage:
    path: Path
    key: str
    notes: tuple[str, ...]
    """What the environment build changed to install here (see BuiltEnvironment)."""

    @property
    def venv(self) -> Path:
        return self.path / "venv"

    @property
    def dirs(self) -> dict[str, Path]:
        """Sandbox directory -> its kept contents on the host."""
        record = json.loads((self.path / RECORD).read_text())
        return {target: self.path / "dirs" / name for target, name in record["dirs"].items()}


def images_dir() -> Path:
    return cache_dir() / "images"


def _dir_name(target: str) -> str:
    return target.strip("/").replace("/", "__") or "root_dir"


# hashing a task's files is the slow part of a key: once per process per unchanged tree
_tree_digests: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def _tree_digest(folder: Path) -> str:
    files = []
    for parent, dirnames, names in os.walk(folder):
        dirnames.sort()
        for name in sorted(names):
            path = Path(parent, name)
            with contextlib.suppress(OSError):
                st = path.lstat()
                files.append((str(path.relative_to(folder)), st.st_size, st.st_mtime_ns))
    stamp = (str(folder), tuple(files))
    if stamp not in _tree_digests:
        h = hashlib.sha256()
        for rel, _, _ in files:
            path = folder / rel
            h.update(rel.encode() + b"\0")
            if path.is_symlink():
                h.update(b"link:" + os.readlink(path).encode())
            else:
                with contextlib.suppress(OSError), open(path, "rb") as f:
                    for chunk in iter(lambda f=f: f.read(1 << 20), b""):
                        h.update(chunk)
            h.update(b"\0")
        _tree_digests[stamp] = h.hexdigest()
    return _tree_digests[stamp]


def image_key(spec: ImageSpec) -> str:
    h = hashlib.sha256()
    h.update(f"image {IMAGE_FORMAT}\n".encode())
    h.update(environment_key(spec.environment).encode() + b"\n")
    h.update(spec.model_dump_json(exclude={"name", "root_source", "context"}).encode() + b"\n")
    for folder in (spec.root_source, spec.context):
        h.update((_tree_digest(Path(folder)) if folder else "-").encode() + b"\n")
    for name in sorted(spec.secrets):
        h.update(hashlib.sha256(f"{name}={spec.secrets[name]}".encode()).digest())
    return h.hexdigest()[:16]


def built_image(spec: ImageSpec) -> BuiltImage | None:
    """The image when it is already built (no building)."""
    path = images_dir() / image_key(spec)
    return _load(path) if (path / ".complete").exists() else None


def _load(path: Path) -> BuiltImage:
    record = json.loads((path / RECORD).read_text())
    return BuiltImage(path, record["key"], tuple(record.get("notes", ())))


_failures: dict[str, EnvironmentBuildError] = {}
_key_locks: dict[str, anyio.Lock] = {}


async def ensure_image(spec: ImageSpec) -> BuiltImage:
    """The built image for `spec`, building it first if needed (once per machine)."""
    environment = await ensure_environment(spec.environment)
    key = image_key(spec)

    async def build(path: Path) -> BuiltImage:
        return await _build(spec, key, path, environment.path, environment.notes)

    return await build_once(images_dir(), key, _load, build, _failures, _key_locks)


def _copy_tree(source: Path, target: Path) -> None:
    """Contents of `source` into `target`, owners, modes and links kept (`cp -a`)."""
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", f"{source}/.", str(target)], check=True, capture_output=True)


async def _build(
    spec: ImageSpec, key: str, path: Path, base_env: Path, notes: tuple[str, ...]
) -> BuiltImage:
    from labcoat.sandbox._command import privileged
    from labcoat.sandbox._layout import AGENT_UID

    staging = images_dir() / f"{key}.building-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    log = images_dir() / f"{key}.failed.log"
    try:
        await anyio.to_thread.run_sync(_copy_tree, base_env, staging / "venv")
        dirs: dict[str, str] = {}
        for target in spec.keep:
            name = _dir_name(target)
            host = staging / "dirs" / name
            host.mkdir(parents=True)
            dirs[target] = name
            if target == "/root":
                if spec.root_source:
                    await anyio.to_thread.run_sync(_copy_tree, Path(spec.root_source), host)
                os.chmod(host, 0o700)
            elif target == "/home/agent" and privileged():
                os.chown(host, AGENT_UID, AGENT_UID)
        output = await _run_steps(spec, staging, dirs)
        await anyio.to_thread.run_sync(_dedupe, staging / "venv")
        record = {
            "key": key,
            "name": spec.name,
            "notes": list(notes),
            "dirs": dirs,
            "steps": [step.label for step in spec.steps],
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (staging / RECORD).write_text(json.dumps(record, indent=2))
        (staging / "build.log").write_text(output)
        (staging / ".complete").write_text("")
        shutil.rmtree(path, ignore_errors=True)
        staging.rename(path)
        log.unlink(missing_ok=True)
        return _load(path)
    except EnvironmentBuildError:
        raise
    except (OSError, subprocess.CalledProcessError) as ex:
        raise ImageBuildError(f"{spec.name}: image build: {ex}", None) from None
    finally:
        if staging.exists():
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(staging, ignore_errors=True))


async def _run_steps(spec: ImageSpec, staging: Path, dirs: dict[str, str]) -> str:
    """Run every step in one build sandbox; the output of all of them, for the record."""
    from labcoat.sandbox._command import privileged
    from labcoat.sandbox._config import Bind, BwrapConfig
    from labcoat.sandbox._session import BwrapSession

    if not spec.steps:
        return ""
    pip_config = host_pip_config()
    pip_cache = cache_dir() / "pip"
    pip_cache.mkdir(parents=True, exist_ok=True)
    binds = [Bind(source=str(staging / "venv"), target=SANDBOX_ENV, writable=True)]
    binds += [
        Bind(source=str(staging / "dirs" / name), target=target, writable=True)
        for target, name in dirs.items()
    ]
    binds.append(Bind(source=str(pip_cache), target=PIP_CACHE_MOUNT, writable=True))
    if spec.context:
        binds.append(Bind(source=spec.context, target=BUILD_CONTEXT))
    seen = {b.target for b in binds}
    # what pip may need to see: the host's pip configuration's files, and local paths the
    # environment's requirements name (a step that pip-installs the same file needs them)
    for local in [*pip_config.paths, *spec.environment.local_paths()]:
        if str(local) not in seen and not str(local).startswith(("/usr/", "/proc")):
            binds.append(Bind(source=str(local), target=str(local)))
            seen.add(str(local))
    system = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
    path = ":".join((f"{SANDBOX_ENV}/bin", "/opt/labcoat/bin", *system))
    config = BwrapConfig(
        # the environment is the staging copy, bound writable: pip in a step installs there
        environment=None,
        workdir="/root",
        network=True,
        network_mode="host",
        memory_mb=None,
        pids=4096,
        file_size_mb=None,
        binds=tuple(binds),
        env={
            **pip_config.variables,
            "PIP_CACHE_DIR": PIP_CACHE_MOUNT,
            "PATH": path,
            "VIRTUAL_ENV": SANDBOX_ENV,
            **spec.env,
        },
        default_user="root" if privileged() else "agent",
    )
    timeout = int(os.environ.get("LABCOAT_ENV_BUILD_TIMEOUT", DEFAULT_BUILD_TIMEOUT))
    outputs: list[str] = []
    session = await BwrapSession.create(config)
    try:
        for step in spec.steps:
            outputs.append(f"=== {step.label}: {' '.join(step.argv)[:300]}\n")
            try:
                result = await session.exec(
                    list(step.argv), cwd=step.cwd, env=dict(spec.secrets), timeout=timeout
                )
            except TimeoutError:
                raise _failure(spec, step, f"took more than {timeout} s", outputs) from None
            outputs.append(result.stdout + result.stderr)
            if not result.success:
                why = f"exit {result.returncode}: {_last_line(result.stdout, result.stderr)}"
                raise _failure(spec, step, why, outputs)
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()
    return "".join(outputs)


def _last_line(stdout: str, stderr: str) -> str:
    text = stderr.strip() or stdout.strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _failure(spec: ImageSpec, step: ImageStep, why: str, outputs: list[str]) -> ImageBuildError:
    log = images_dir() / f"{image_key(spec)}.failed.log"
    log.write_text("".join(outputs))
    return ImageBuildError(f"{spec.name}: {step.label} failed ({why})", log)

"""Task images: a task's environment plus what its build steps leave behind, built once.

Some task formats prepare a machine before any sample starts: METR task families copy
files and run shell commands (`build_steps.json`) and call `TaskFamily.install()` as root,
with the network, in an image that every run of the family then starts from. An image
here is the same idea without Docker: a copy of the task's Python environment (the
`PythonEnv`, built as usual) and a few named directories (`/root`, `/home/agent`, ...),
changed by the steps in a build sandbox and kept, keyed by their content:

    images/<key>/venv            the environment after the steps (pip installs land here)
    images/<key>/dirs/<name>     each kept directory (e.g. dirs/root for /root)
    images/<key>/rootfs          with `ImageSpec.system`: the root file system after the
                                 steps (a copy of the Debian tree `_rootfs` built)

Without `system` the steps run on the host's read-only system tree (the fast path): an
`apt-get install` fails there. With it, the environment is made by the tree's own
Python, in the tree, and the steps run as root in a writable copy of it, which samples
then see read-only as their system.

Sandboxes mount the image's environment read-only at /opt/labcoat/env, like any other
environment (`BwrapConfig.image`); whoever starts a sample copies the kept directories
it needs (`ensure_image(spec).dirs`). A step that fails makes the image unavailable with
its one-line reason (`EnvironmentBuildError`); the whole output is kept in a log file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import anyio

from labcoat._util.content_hash import tree_digest
from labcoat.sandbox._build import (
    BuildFailed,
    EnvironmentBuildError,
    build_config,
    build_once,
    build_session,
    build_timeout,
    dedupe,
)
from labcoat.sandbox._built import BuiltEnvironment
from labcoat.sandbox._config import Bind
from labcoat.sandbox._environment import ensure_environment, environment_key
from labcoat.sandbox._image_spec import ImageSpec, ImageStep
from labcoat.sandbox._layout import (
    AGENT_UID,
    Isolation,
    cache_dir,
    chown_tree,
    isolation,
    remove_tree,
    separate_users,
)
from labcoat.sandbox._paths import BUILD_CONTEXT, SANDBOX_BIN, SANDBOX_ENV, SYSTEM_PATH
from labcoat.sandbox._rootfs import BuiltSystem, ensure_system, system_at

logger = logging.getLogger(__name__)

IMAGE_FORMAT = "1"  # bump when the layout of a built image changes
RECORD = "labcoat-image.json"


class ImageBuildError(BuildFailed):
    """A build step failed: the image (and every task using it) is unavailable here."""


@dataclass(frozen=True)
class BuiltImage:
    path: Path
    key: str
    notes: tuple[str, ...]
    """What the environment build changed to install here (see BuiltEnvironment)."""
    host_paths: tuple[str, ...] = ()
    """Host folders its environment uses besides its own (see BuiltEnvironment)."""

    @property
    def venv(self) -> Path:
        return self.path / "venv"

    @property
    def rootfs(self) -> Path | None:
        """The image's own root file system (`ImageSpec.system`), else None."""
        tree = self.path / "rootfs"
        return tree if tree.is_dir() else None

    @property
    def dirs(self) -> dict[str, Path]:
        """Sandbox directory -> its kept contents on the host."""
        record = json.loads((self.path / RECORD).read_text())
        return {target: self.path / "dirs" / name for target, name in record["dirs"].items()}


def images_dir() -> Path:
    return cache_dir() / "images"


def _dir_name(target: str) -> str:
    return target.strip("/").replace("/", "__") or "root_dir"


def _tree_digest(folder: Path) -> str:
    """A build context's content hash (`labcoat._util.content_hash`: links by their text,
    `.git` and `__pycache__` left out, reused in this process while the tree is unchanged)."""
    digest = tree_digest(folder)
    if digest.unreadable:
        logger.warning(
            "image key of %s: %d unreadable file(s) counted as unreadable: %s",
            folder,
            len(digest.unreadable),
            ", ".join(digest.unreadable[:5]),
        )
    return digest.hash


def image_key(spec: ImageSpec) -> str:
    h = hashlib.sha256()
    h.update(f"image {IMAGE_FORMAT}\n".encode())
    # the image's files have the owners of its mode's users (root's and the agent's,
    # real or mapped; in one user's sandbox every file is that user's): one per mode
    h.update(f"{isolation()}\n".encode())
    system = system_at(spec.system) if spec.system is not None else None
    h.update(environment_key(spec.environment, system).encode() + b"\n")
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
    return BuiltImage(
        path,
        record["key"],
        tuple(record.get("notes", ())),
        tuple(record.get("host_paths", ())),
    )


_failures: dict[str, EnvironmentBuildError] = {}
_key_locks: dict[str, anyio.Lock] = {}


async def ensure_image(spec: ImageSpec) -> BuiltImage:
    """The built image for `spec`, building it first if needed (once per machine)."""
    system = await ensure_system(spec.system) if spec.system is not None else None
    environment = await ensure_environment(spec.environment, system)
    key = image_key(spec)

    async def build(path: Path) -> BuiltImage:
        return await _build(spec, key, path, environment, system)

    return await build_once(images_dir(), key, _load, build, _failures, _key_locks)


def _copy_tree(source: Path, target: Path) -> None:
    """Contents of `source` into `target`, owners, modes and links kept (`cp -a`)."""
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["cp", "-a", "--reflink=auto", f"{source}/.", str(target)], check=True, capture_output=True
    )


async def _build(
    spec: ImageSpec,
    key: str,
    path: Path,
    environment: BuiltEnvironment,
    system: BuiltSystem | None = None,
) -> BuiltImage:
    staging = images_dir() / f"{key}.building-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    log = images_dir() / f"{key}.failed.log"
    try:
        await anyio.to_thread.run_sync(_copy_tree, environment.path, staging / "venv")
        if system is not None:  # the steps change a copy: the tree serves other images
            await anyio.to_thread.run_sync(_copy_tree, system.tree, staging / "rootfs")
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
                if isolation() is Isolation.SEPARATE_USERS:  # root's, as a root harness makes it
                    chown_tree(host, 0, 0)
            elif target == "/home/agent" and separate_users():
                chown_tree(host, AGENT_UID, AGENT_UID)
        output = await _run_steps(spec, staging, dirs, environment.host_paths)
        await anyio.to_thread.run_sync(dedupe, staging / "venv")
        record = {
            "key": key,
            "name": spec.name,
            "notes": list(environment.notes),
            "host_paths": list(environment.host_paths),
            "dirs": dirs,
            "steps": [step.label for step in spec.steps],
            "system": system.key if system is not None else None,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (staging / RECORD).write_text(json.dumps(record, indent=2))
        (staging / "build.log").write_text(output)
        (staging / ".complete").write_text("")
        remove_tree(path)
        staging.rename(path)
        log.unlink(missing_ok=True)
        return _load(path)
    except EnvironmentBuildError:
        raise
    except (OSError, subprocess.CalledProcessError) as ex:
        raise ImageBuildError(f"{spec.name}: image build: {ex}", None) from None
    finally:
        if staging.exists():
            await anyio.to_thread.run_sync(remove_tree, staging)


async def _run_steps(
    spec: ImageSpec, staging: Path, dirs: dict[str, str], host_paths: tuple[str, ...]
) -> str:
    """Run every step in one build sandbox; the output of all of them, for the record."""
    if not spec.steps:
        return ""
    binds = [Bind(source=str(staging / "venv"), target=SANDBOX_ENV, writable=True)]
    binds += [
        Bind(source=str(staging / "dirs" / name), target=target, writable=True)
        for target, name in dirs.items()
    ]
    if spec.context:
        binds.append(Bind(source=spec.context, target=BUILD_CONTEXT))
    path = ":".join((f"{SANDBOX_ENV}/bin", SANDBOX_BIN, *SYSTEM_PATH))
    # the environment is the staging copy, bound writable: pip in a step installs there;
    # a step that pip-installs the environment's local files needs to see them
    config = build_config(
        "/root",
        binds,
        [*spec.environment.local_paths(), *map(Path, host_paths)],
        {"PATH": path, "VIRTUAL_ENV": SANDBOX_ENV, **spec.env},
    )
    rootfs = staging / "rootfs"
    if rootfs.is_dir():  # the image's own system, which the steps may change anywhere
        env = {**config.env, "DEBIAN_FRONTEND": "noninteractive"}  # apt asks nobody
        update = {"system_root": str(rootfs), "system_writable": True, "env": env}
        config = config.model_copy(update=update)
    timeout = build_timeout()
    outputs: list[str] = []
    async with build_session(config) as session:
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
    return "".join(outputs)


def _last_line(stdout: str, stderr: str) -> str:
    text = stderr.strip() or stdout.strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _failure(spec: ImageSpec, step: ImageStep, why: str, outputs: list[str]) -> ImageBuildError:
    log = images_dir() / f"{image_key(spec)}.failed.log"
    log.write_text("".join(outputs))
    return ImageBuildError(f"{spec.name}: {step.label} failed ({why})", log)

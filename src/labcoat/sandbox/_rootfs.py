"""Debian root file systems, built from Debian's archive without a container daemon.

A task whose build steps install system packages (`apt-get install ...`) cannot run on the
host's read-only system tree. For such a task labcoat builds what the METR standard's
Dockerfile starts from — Debian with Python 3, the `agent` user and the `protected`
group — with `mmdebstrap` (root only: it unpacks packages as their owners), once per
machine and content:

    rootfs/<key>/tree     the root file system (a sandbox's `/` when `system_root` names it)

The package lists are kept (`apt-get install` works without `apt-get update`, as in an
image built with them). A sandbox mounts the tree's top-level folders one by one
(`_system_mounts`), so labcoat's own mounts (/opt/labcoat, /run, /tmp, the homes) need no
place in it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import anyio

from labcoat.sandbox._build import BuildFailed, EnvironmentBuildError, build_once, build_timeout
from labcoat.sandbox._image_spec import SystemSpec
from labcoat.sandbox._layout import AGENT_UID, PROTECTED_GID, Isolation, cache_dir, isolation
from labcoat.sandbox._paths import AGENT_HOME

ROOTFS_FORMAT = "1"  # bump when what a built tree holds changes
RECORD = "labcoat-rootfs.json"
MMDEBSTRAP_HINT = "install it with `apt-get install mmdebstrap`"


class SystemBuildError(BuildFailed):
    """The root file system cannot be built here: every task needing it is unavailable."""


@dataclass(frozen=True)
class BuiltSystem:
    path: Path
    key: str

    @property
    def tree(self) -> Path:
        return self.path / "tree"


def rootfs_dir() -> Path:
    return cache_dir() / "rootfs"


def system_key(spec: SystemSpec) -> str:
    text = "\n".join([ROOTFS_FORMAT, spec.model_dump_json(), *sorted(spec.packages)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def system_at(spec: SystemSpec) -> BuiltSystem:
    """Where the tree for `spec` is (or will be) kept, built or not."""
    key = system_key(spec)
    return BuiltSystem(rootfs_dir() / key, key)


def built_system(spec: SystemSpec) -> BuiltSystem | None:
    """The tree when it is already built (no building)."""
    system = system_at(spec)
    return system if (system.path / ".complete").exists() else None


def system_unavailable() -> str | None:
    """Why no root file system can be built on this machine, or None."""
    if isolation() is not Isolation.ROOT:
        return "building a Debian root file system needs root (mmdebstrap unpacks as owners)"
    if shutil.which("mmdebstrap") is None:
        return f"mmdebstrap is not installed: {MMDEBSTRAP_HINT}"
    return None


_failures: dict[str, EnvironmentBuildError] = {}
_key_locks: dict[str, anyio.Lock] = {}


async def ensure_system(spec: SystemSpec) -> BuiltSystem:
    """The built tree for `spec`, building it first if needed (once per machine)."""
    system = system_at(spec)

    async def build(path: Path) -> BuiltSystem:
        return await _build(spec, system)

    return await build_once(
        rootfs_dir(), system.key, lambda _: system, build, _failures, _key_locks
    )


async def _build(spec: SystemSpec, system: BuiltSystem) -> BuiltSystem:
    why = system_unavailable()
    if why:
        raise SystemBuildError(why, None)
    staging = rootfs_dir() / f"{system.key}.building-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    log = rootfs_dir() / f"{system.key}.failed.log"
    argv = [
        "mmdebstrap",
        "--mode=root",
        "--variant=minbase",
        f"--include={','.join(spec.packages)}",
        "--skip=cleanup/apt/lists",
        spec.suite,
        str(staging / "tree"),
        spec.mirror,
    ]
    started = time.monotonic()
    try:
        try:
            with anyio.fail_after(build_timeout()):
                done = await anyio.run_process(argv, check=False, stderr=subprocess.STDOUT)
        except (OSError, TimeoutError) as ex:
            raise SystemBuildError(f"mmdebstrap could not run: {ex}", None) from None
        output = done.stdout.decode(errors="replace")
        if done.returncode != 0:
            log.write_text(output)
            last = [line for line in output.splitlines() if line.strip()][-1:] or ["no output"]
            raise SystemBuildError(f"mmdebstrap {spec.suite} failed: {last[0][:300]}", log)
        prepare_tree(staging / "tree")
        record = {
            "key": system.key,
            "suite": spec.suite,
            "packages": list(spec.packages),
            "mirror": spec.mirror,
            "seconds": round(time.monotonic() - started, 1),
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (staging / RECORD).write_text(json.dumps(record, indent=2))
        (staging / "build.log").write_text(output)
        (staging / ".complete").write_text("")
        shutil.rmtree(system.path, ignore_errors=True)
        staging.rename(system.path)
        log.unlink(missing_ok=True)
        return system
    finally:  # nothing half-built is kept, whatever stopped the build
        if staging.exists():
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(staging, ignore_errors=True))


def prepare_tree(tree: Path) -> None:
    """The standard's users, and the files labcoat mounts over (a read-only tree cannot
    get them later)."""
    etc = tree / "etc"
    _add_line(etc / "group", "protected", f"protected:x:{PROTECTED_GID}:")
    _add_line(etc / "group", "agent", f"agent:x:{AGENT_UID}:")
    _add_line(
        etc / "passwd", "agent", f"agent:x:{AGENT_UID}:{AGENT_UID}:agent:{AGENT_HOME}:/bin/bash"
    )
    _add_line(etc / "shadow", "agent", "agent:*:19000:0:99999:7:::")
    for name in ("resolv.conf", "hosts", "hostname"):
        target = etc / name
        if target.is_symlink():
            target.unlink()
        target.touch()
    home = tree / AGENT_HOME.lstrip("/")
    home.mkdir(parents=True, exist_ok=True)
    shutil.chown(home, AGENT_UID, AGENT_UID)


def _add_line(path: Path, name: str, line: str) -> None:
    lines = path.read_text().splitlines() if path.exists() else []
    if not any(existing.split(":", 1)[0] == name for existing in lines):
        path.write_text("\n".join([*lines, line]) + "\n")

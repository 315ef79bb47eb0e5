"""Per-sample resource limits: cgroups when the host lets us, rlimits otherwise.

cgroups cap the whole sample (every process together) and let us kill everything in
it; rlimits only cap each process. Which one applies is recorded with the sandbox so a
log says how strong the limit was.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import pwd
import shlex
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass
class Cgroup:
    """One sample's cgroup, possibly spread over several v1 hierarchies."""

    kind: str  # "v1" or "v2"
    dirs: list[Path] = field(default_factory=list)

    def join_command(self) -> str:
        """Shell that moves itself into the cgroup before exec'ing the sandbox."""
        return " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.dirs)

    @property
    def caps_cpu(self) -> bool:
        """Whether this cgroup holds a CPU quota (it is best effort, unlike memory)."""
        return any((d / "cpu.cfs_quota_us").exists() or (d / "cpu.max").exists() for d in self.dirs)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
        return found

    def oom_kills(self) -> int:
        """How many processes the kernel killed for memory in this cgroup."""
        for d in self.dirs:
            for name in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError):
                    for line in (d / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
        return 0

    def kill_all(self) -> None:
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still busy for a moment after the last kill
                    time.sleep(0.02)


def _own_cgroup_path(controller: str | None) -> str | None:
    """This process's cgroup path for a v1 controller, or the v2 path when None."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller is None and controllers == "":
                return path
            if controller is not None and controller in controllers.split(","):
                return path
    return None


def _v1_dir(controller: str, name: str) -> Path | None:
    mount = CGROUP_ROOT / controller
    own = _own_cgroup_path(controller)
    if own is None or not (mount / "cgroup.procs").exists():
        return None
    return mount / own.lstrip("/") / name


@dataclass(frozen=True)
class Wanted:
    """The limits a cgroup should enforce; memory and processes must hold, CPU is best effort."""

    memory_mb: int | None = None
    pids: int | None = None
    cpus: float | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.memory_mb, self.pids, self.cpus))


CPU_PERIOD_US = 100_000


def _write_v1(d: Path, controller: str, wanted: Wanted) -> None:
    if controller == "memory":
        limit = str(wanted.memory_mb * 1024 * 1024)  # type: ignore[operator]
        (d / "memory.limit_in_bytes").write_text(limit)
        # with swap accounting, also cap swap so the limit is a real one
        swap = d / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(limit)
    elif controller == "pids":
        (d / "pids.max").write_text(str(wanted.pids))
    else:
        (d / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
        (d / "cpu.cfs_quota_us").write_text(str(int(wanted.cpus * CPU_PERIOD_US)))  # type: ignore[operator]


def _try_v1(name: str, wanted: Wanted, why: list[str] | None = None) -> Cgroup | None:
    group = Cgroup("v1")
    requested = {"memory": wanted.memory_mb, "pids": wanted.pids, "cpu": wanted.cpus}
    d: Path | None = None
    try:
        for controller, value in requested.items():
            if value is None:
                continue
            d = _v1_dir(controller, name)
            try:
                if d is None:
                    raise OSError(f"no v1 {controller} hierarchy")
                d.mkdir(parents=True, exist_ok=True)
                group.dirs.append(d)
                _write_v1(d, controller, wanted)
            except OSError:
                if controller == "cpu":  # a CPU cap is nice to have, not a safety limit
                    logger.debug("no cgroup CPU cap for %s", name)
                    continue
                raise
    except OSError as ex:
        logger.debug("cgroup v1 unavailable: %s", ex)
        if why is not None:
            why.append(f"cgroup v1: {_v1_refusal(ex, d)}")
        group.remove()
        return None
    return group if group.dirs else None


def _v1_refusal(ex: OSError, made: Path | None) -> str:
    """Why a v1 cgroup could not be made, as a sentence (an errno's repr names no one)."""
    path = Path(os.fsdecode(ex.filename)) if ex.filename is not None else None
    if path is None or ex.errno not in (errno.EACCES, errno.EPERM):
        return f"{path}: {(ex.strerror or str(ex)).lower()}" if path is not None else str(ex)
    who = cgroup_user()
    if made is not None and (path == made or path in made.parents):  # a mkdir
        return f"{who} may not make cgroups in {path.parent} (it belongs to {_owner(path.parent)})"
    return f"{who} may not write {path} (it belongs to {_owner(path)})"


def cgroup_user() -> str:
    """This process's user's name (its uid where it has none)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


def _owner(path: Path) -> str:
    try:
        uid = path.stat().st_uid
    except OSError:
        return "another user"
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def cgroup_version() -> str | None:
    """Which cgroups this machine has: `v2` where /sys/fs/cgroup is the unified hierarchy,
    `v1` where it holds a v1 memory or pids hierarchy (a hybrid's controller-less v2 beside
    them counts as v1), else None."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return "v2"
    if any((CGROUP_ROOT / c / "cgroup.procs").exists() for c in ("memory", "pids")):
        return "v1"
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as ex:
        raise OSError(f"{path}: {ex.strerror or ex}") from ex


def _write(path: Path, text: str) -> None:
    """Write a cgroup file; an error names the file (a refused write's errno names none)."""
    try:
        path.write_text(text)
    except OSError as ex:
        error = OSError(f"writing {text!r} to {path}: {ex.strerror or ex}")
        error.errno = ex.errno
        raise error from ex


HARNESS_LEAF = "labcoat-harness"
"""cgroup v2 lets a cgroup that holds processes give no controller to its children: in
its own cgroup (a systemd scope with Delegate=yes, a container's), labcoat first moves
itself into this leaf, as nested container runtimes do, and puts samples beside it."""


def _v2_parent(own: str) -> Path:
    """Where samples' cgroups go: this process's cgroup, or the one above its leaf."""
    path = CGROUP_ROOT / own.lstrip("/")
    return path.parent if path.name == HARNESS_LEAF else path


def _enable_controllers(parent: Path, missing: list[str]) -> None:
    """Give `missing` controllers to the children of `parent`, moving this process into a
    leaf first when the kernel refuses because it lives in `parent` itself (EBUSY)."""
    line = " ".join(f"+{c}" for c in missing)
    try:
        _write(parent / "cgroup.subtree_control", line)
    except OSError as ex:
        here = str(os.getpid()) in _read(parent / "cgroup.procs").split()
        if ex.errno != errno.EBUSY or not here:
            raise
        leaf = parent / HARNESS_LEAF
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))  # the whole process, every thread
        logger.info("moved labcoat into %s to give its samples cgroups of their own", leaf)
        _write(parent / "cgroup.subtree_control", line)


def _try_v2(name: str, wanted: Wanted, why: list[str] | None = None) -> Cgroup | None:
    own = _own_cgroup_path(None)
    if own is None or not (CGROUP_ROOT / "cgroup.controllers").exists():
        if why is not None:
            v1 = " (this machine's cgroups are v1)" if cgroup_version() == "v1" else ""
            why.append(f"cgroup v2: not mounted at {CGROUP_ROOT}{v1}")
        return None
    parent = _v2_parent(own)
    d = parent / name
    try:
        needed = [c for c, v in (("memory", wanted.memory_mb), ("pids", wanted.pids)) if v]
        # a controller the parent does not have cannot be enabled (the kernel's ENOENT
        # names no file): say which, and where
        available = _read(parent / "cgroup.controllers").split()
        if absent := [c for c in needed if c not in available]:
            raise OSError(
                f"no {' or '.join(absent)} controller in {parent / 'cgroup.controllers'}"
                f" ({' '.join(available) or 'empty'})"
            )
        enabled = _read(parent / "cgroup.subtree_control").split()
        if missing := [c for c in needed if c not in enabled]:
            _enable_controllers(parent, missing)
        d.mkdir(exist_ok=True)
        if wanted.memory_mb is not None:
            _write(d / "memory.max", str(wanted.memory_mb * 1024 * 1024))
            with contextlib.suppress(OSError):
                _write(d / "memory.swap.max", "0")
        if wanted.pids is not None:
            _write(d / "pids.max", str(wanted.pids))
        if wanted.cpus is not None:
            with contextlib.suppress(OSError):  # best effort, as in v1
                if "cpu" not in enabled:
                    _write(parent / "cgroup.subtree_control", "+cpu")
                _write(d / "cpu.max", f"{int(wanted.cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
    except OSError as ex:
        logger.debug("cgroup v2 unavailable: %s", ex)
        if why is not None:
            why.append(f"cgroup v2: {ex}")
        with contextlib.suppress(OSError):
            d.rmdir()
        return None
    return Cgroup("v2", [d])


def create_cgroup(name: str, wanted: Wanted) -> Cgroup | None:
    """A cgroup enforcing the limits, or None when this host gives us none to use."""
    if os.environ.get("LABCOAT_SANDBOX_CGROUPS", "1") == "0" or not wanted:
        return None
    return _try_v2(name, wanted) or _try_v1(name, wanted)


def limits_here() -> str:
    """Which mechanism a sample's memory and process limits get on this machine, and why
    it is not a cgroup when it is not (a probe cgroup is made and removed)."""
    if os.environ.get("LABCOAT_SANDBOX_CGROUPS", "1") == "0":
        return "rlimits per process (LABCOAT_SANDBOX_CGROUPS=0)"
    why: list[str] = []
    wanted = Wanted(memory_mb=64, pids=64)
    name = f"labcoat-probe-{os.getpid()}"
    group = _try_v2(name, wanted, why) or _try_v1(name, wanted, why)
    if group is None:
        return "rlimits per process (" + "; ".join(why) + ")"
    group.remove()
    if group.kind == "v2":
        return "cgroup v2"
    controllers = sorted(d.relative_to(CGROUP_ROOT).parts[0] for d in group.dirs)
    return f"cgroup v1 ({', '.join(controllers)})"


def rlimits(
    memory_mb: int | None,
    pids: int | None,
    file_size_mb: int | None,
    cgroup: Cgroup | None,
    gpus: bool = False,
) -> dict[str, int]:
    """rlimits the exec server sets on itself (its commands inherit them).

    File size is always an rlimit. Memory and process count fall back to rlimits only
    when no cgroup enforces them; they are per process (memory) or per user (processes).
    With GPUs, memory is capped by RLIMIT_DATA, not RLIMIT_AS: CUDA reserves address
    space far beyond any memory cap (inaccessible mappings, which RLIMIT_DATA leaves out).
    """
    limits: dict[str, int] = {"RLIMIT_CORE": 0}
    if file_size_mb is not None:
        limits["RLIMIT_FSIZE"] = file_size_mb * 1024 * 1024
    if cgroup is None and memory_mb is not None:
        limits["RLIMIT_DATA" if gpus else "RLIMIT_AS"] = memory_mb * 1024 * 1024
    if cgroup is None and pids is not None:
        limits["RLIMIT_NPROC"] = pids
    return limits


def existing_cgroup(name: str) -> Cgroup | None:
    """The cgroup a sample of this machine made under `name`, if it is still there (a run
    that died without cleaning up leaves it)."""
    v2 = _own_cgroup_path(None)
    if v2 is not None and (CGROUP_ROOT / "cgroup.controllers").exists():
        folder = _v2_parent(v2) / name
        return Cgroup("v2", [folder]) if folder.is_dir() else None
    dirs = [d for c in ("memory", "pids", "cpu") if (d := _v1_dir(c, name)) and d.is_dir()]
    return Cgroup("v1", dirs) if dirs else None

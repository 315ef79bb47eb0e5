"""Configuration of a bwrap sandbox: what a task may ask for, per sample."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from labcoat.sandbox._image_spec import ImageSpec
from labcoat.sandbox._paths import DEFAULT_WORKDIR
from labcoat.sandbox._requirements import PythonEnv

DEFAULT_DISK_MB = 16384


class Bind(BaseModel, frozen=True):
    """A host path made visible in the sandbox."""

    source: str
    target: str
    writable: bool = False


class BwrapConfig(BaseModel, frozen=True):
    """Everything that shapes one sample's sandbox.

    Defaults are the safe ones: no network, a 4 GiB memory cap, 512 processes, a 16 GiB
    disk quota, no host environment variables.
    """

    workdir: str = DEFAULT_WORKDIR
    """Working directory of commands (and base of relative paths)."""

    home_source: str | None = None
    """Host directory copied in as /home/agent; a fresh empty one when None."""

    root_source: str | None = None
    """Host directory copied in as /root (root-only where labcoat runs as root)."""

    network: bool = False
    network_mode: Literal["proxy", "host"] = "proxy"
    """With network: `proxy` (HTTP(S) through labcoat's recording, filtering proxy; the
    host's own addresses unreachable) or `host` (the host's network as is)."""

    blocklist: Mapping[str, Sequence[str]] | None = None
    """`{"urls": [...], "patterns": [...]}` refused by the proxy (see integrity.Blocklist)."""
    memory_mb: int | None = Field(default=4096, gt=0)
    cpus: float | None = Field(default=None, gt=0)
    """CPU share of the sample (a cgroup quota where possible) and the thread count that
    numpy/BLAS/OpenMP use (OMP_NUM_THREADS and friends); None: the whole machine."""
    pids: int | None = Field(default=512, gt=0)
    file_size_mb: int | None = Field(default=8192, gt=0)
    disk_mb: int | None = Field(default=DEFAULT_DISK_MB, gt=0)
    """Quota on everything the sample can write together (its home, /tmp, /root); None:
    no quota. See docs/sandbox.md, "Disk"."""
    disk_fuse: bool = True
    """Whether a FUSE image may hold the quota (without root). Graders say no: their
    writes would go through one FUSE daemon, slower than the host's disk, inside what
    they time; a watched quota holds there instead."""
    command_timeout: int | None = Field(default=None, gt=0)
    """Upper bound on any single command's wall time (seconds)."""

    gpus: int = Field(default=0, ge=0)
    """GPUs the sample holds, each held by no other sample (`BwrapSession` leases them
    from the machine's pool; only their device nodes are bound, and CUDA_VISIBLE_DEVICES
    names them). `True` means one."""

    environment: PythonEnv | None = PythonEnv()
    """The task's Python environment (a venv built by pip, mounted read-only); an empty
    one by default, so the host's packages never show. None: the bare interpreter
    (labcoat's own build sandboxes)."""

    image: ImageSpec | None = None
    """A task image (see `ImageSpec`): when set, /opt/labcoat/env is the image's
    environment (the build steps' installs included) instead of `environment`'s."""

    system_root: str | None = None
    """A host folder holding a root file system (`_rootfs`) that the sandbox sees as its
    system (/usr, /etc, /var, ...) instead of the host's; None: the host's system tree."""
    system_writable: bool = False
    """The system root is mounted writable (an image build's steps install into it)."""

    binds: tuple[Bind, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set in the sandbox, literally."""

    pass_env: tuple[str, ...] = ()
    """Names of host variables a task explicitly lets in (never anything else)."""

    default_user: str = "agent"
    """`agent` (uid 1000) or `root`; who runs commands when exec() names nobody."""

    agent_jail: bool = False
    """A grader's sandbox: with one user, the agent's code it runs goes into a sandbox
    nested in it (`LABCOAT_AS_AGENT`, see `_agent_jail`), so the sandbox may create user
    namespaces. Nothing changes where root and the agent are separate users."""

    def __hash__(self) -> int:  # Inspect caches sandboxes by config; `env` is a dict
        return hash(self.model_dump_json())

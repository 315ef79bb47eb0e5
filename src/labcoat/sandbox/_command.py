"""The bubblewrap command line for one sample's sandbox.

Three modes (`_layout.Isolation`), two command lines:
- root, and rootless with separate users: the exec server keeps a Docker-like set of
  capabilities as root and drops to uid 1000 for the agent, so root and agent are real,
  distinct users (protected files can be root-only, as in METR's task standard). As
  root there is no user namespace; rootless, bwrap itself runs as root of a user
  namespace that maps the caller's subordinate ids (`_userns`), and the line is the same;
- one user: an unprivileged user namespace where the one mapped user is the agent
  (uid 1000); exec as root is refused with SandboxUserUnsupportedError.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from labcoat._errors import MissingDependencyError
from labcoat.sandbox import _agent_jail
from labcoat.sandbox._config import BwrapConfig
from labcoat.sandbox._gpus import (
    Gpu,
    control_nodes,
    driver_files,
    driver_library_dirs,
    driver_tool_dirs,
)
from labcoat.sandbox._layout import AGENT_UID, SampleDirs, mapped, separate_users
from labcoat.sandbox._paths import (
    AGENT_HOME,
    AS_AGENT_ENV,
    SANDBOX_AGENT_JAIL,
    SANDBOX_BIN,
    SANDBOX_DRIVER,
    SANDBOX_ENV,
    SANDBOX_PROXY_PORT,
    SANDBOX_PROXY_SOCKET,
    SANDBOX_PYTHON_PREFIX,
    SANDBOX_RUN_DIR,
    SANDBOX_SERVER,
    SYSTEM_PATH,
)
from labcoat.sandbox._private_trees import PrivateTrees
from labcoat.sandbox._system_mounts import system_root_etc, system_root_mounts

# Docker's default capability set, minus NET_RAW unless the network is on.
ROOT_CAPS = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_MKNOD",
    "CAP_AUDIT_WRITE",
    "CAP_SETFCAP",
)

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
"""The thread counts numpy, BLAS and OpenMP read: the one list (`thread_environment`; a
ResearchCodeBench run slot gets its variables from it, not a copy)."""

SYSTEM_DIRS = ("/usr",)
SYSTEM_LINKS_OR_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "mime.types",
    "protocols",
    "services",
    "os-release",
    "debian_version",
    "bash.bashrc",
    "inputrc",
    "magic",
    "magic.mime",
    "login.defs",
    "shells",
    # PAM's configuration: `runuser`/`su` (METR's protected scoring runs the agent's
    # code through `runuser agent --group=protected --login`) abort without it
    "pam.d",
    "security",
)
NETWORK_ETC_FILES = ("resolv.conf", "gai.conf", "host.conf")


RUN_TMPFS_BYTES = 1024 * 1024

BWRAP_INSTALL_HINT = (
    "bubblewrap (bwrap) is not installed: install it with `apt-get install bubblewrap` "
    "(or `dnf install bubblewrap`), or choose another sandbox with --sandbox"
)


def bwrap_path() -> str:
    """The bwrap executable, or a one-line error saying how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise MissingDependencyError(BWRAP_INSTALL_HINT)
    return found


@functools.cache
def bwrap_sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bwrap has `--size` (0.7 and later): tmpfs mounts with a size cap."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in done.stdout + done.stderr


def _sized_tmpfs(bwrap: str, size: int, path: str, perms: str) -> list[str]:
    """A tmpfs at `path`, capped at `size` bytes where bwrap can cap it."""
    args = ["--perms", perms]
    if bwrap_sizes_tmpfs(bwrap):
        args += ["--size", str(size)]
    return [*args, "--tmpfs", path]


def shm_bytes(config: BwrapConfig) -> int:
    """/dev/shm's size: half the sample's memory (its pages are memory), 1 GiB without."""
    return (config.memory_mb or 2048) * 1024 * 1024 // 2


def host_network(config: BwrapConfig) -> bool:
    return config.network and config.network_mode == "host"


def nests_agent_code(config: BwrapConfig) -> bool:
    """A grader's sandbox with one user: the agent's code it runs goes into a nested one."""
    return config.agent_jail and not separate_users()


def proxied_network(config: BwrapConfig) -> bool:
    return config.network and config.network_mode == "proxy"


@dataclass(frozen=True)
class PythonLayout:
    """Where the interpreter lives on the host and in the sandbox."""

    host_prefix: Path
    sandbox_prefix: str
    sandbox_executable: str
    library_path: str | None  # for relocated interpreters that link libpython


SYSTEM_PYTHON = PythonLayout(Path("/usr"), "/usr", "/usr/bin/python3", None)
"""A root file system's own interpreter (`BwrapConfig.system_root`)."""


def python_layout(config: BwrapConfig | None = None) -> PythonLayout:
    """The interpreter a sandbox runs: the system root's own, else the host's (labcoat's)."""
    if config is not None and config.system_root:
        return SYSTEM_PYTHON
    prefix = Path(sys.base_prefix).resolve()
    base_exe = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    # Mounted where it is when the system tree already holds it, relocated otherwise
    # (its own libpython is then found through LD_LIBRARY_PATH).
    if str(prefix).startswith("/usr"):
        return PythonLayout(prefix, str(prefix), str(base_exe), None)
    relative = (
        base_exe.relative_to(prefix)
        if base_exe.is_relative_to(prefix)
        else Path("bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
    )
    return PythonLayout(
        prefix,
        SANDBOX_PYTHON_PREFIX,
        f"{SANDBOX_PYTHON_PREFIX}/{relative}",
        f"{SANDBOX_PYTHON_PREFIX}/lib",
    )


def proxy_environment() -> dict[str, str]:
    """Variables that send a sandbox's HTTP(S) clients to the proxy's forwarder."""
    url = f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "NO_PROXY": "localhost,127.0.0.1,::1",
        "no_proxy": "localhost,127.0.0.1,::1",
    }


def thread_environment(cpus: float) -> dict[str, str]:
    """Thread counts for numpy/BLAS/OpenMP that match a CPU share."""
    threads = str(max(1, math.ceil(cpus)))
    return dict.fromkeys(THREAD_VARIABLES, threads)


def gpu_environment(gpus: tuple[Gpu, ...]) -> dict[str, str]:
    """Variables that name a sample's GPUs to CUDA (and to tools that read NVIDIA's)."""
    if not gpus:
        return {}
    ids = ",".join(gpu.cuda_id for gpu in gpus)
    return {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",  # indices as NVML and nvidia-smi count them
        "CUDA_VISIBLE_DEVICES": ids,
        "NVIDIA_VISIBLE_DEVICES": ids,
    }


def _library_path(python: PythonLayout, gpus: tuple[Gpu, ...]) -> str | None:
    """LD_LIBRARY_PATH: a relocated interpreter's libpython, a GPU sandbox's driver."""
    parts = [python.library_path] if python.library_path else []
    if gpus:
        parts += [SANDBOX_DRIVER] if python == SYSTEM_PYTHON else driver_library_dirs()
    return ":".join(parts) or None


def base_environment(
    config: BwrapConfig, python: PythonLayout, env_dir: Path | None, gpus: tuple[Gpu, ...] = ()
) -> dict[str, str]:
    """The variables every command starts from: nothing of the host unless named."""
    path = [SANDBOX_BIN, *SYSTEM_PATH]
    env = {"LANG": "C.UTF-8", "TMPDIR": "/tmp", "SHELL": "/bin/bash"}
    if env_dir is not None:
        # the task's venv: its interpreter sees its own packages and none of the host's
        path.insert(0, f"{SANDBOX_ENV}/bin")
        env["VIRTUAL_ENV"] = SANDBOX_ENV
    library_path = _library_path(python, gpus)
    if library_path:
        env["LD_LIBRARY_PATH"] = library_path
    if gpus:
        path += [SANDBOX_DRIVER] if python == SYSTEM_PYTHON else driver_tool_dirs()
    if proxied_network(config):
        env.update(proxy_environment())
    if config.cpus is not None:
        env.update(thread_environment(config.cpus))
    env.update(gpu_environment(gpus))
    env["PATH"] = ":".join(path)
    if nests_agent_code(config):
        env[AS_AGENT_ENV] = f"{python.sandbox_executable} -I -S {SANDBOX_AGENT_JAIL}"
    for name in config.pass_env:
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(config.env)
    return env


def login_environment(
    config: BwrapConfig, python: PythonLayout, env_dir: Path | None, gpus: tuple[Gpu, ...] = ()
) -> dict[str, str]:
    """What a login shell should have of the sandbox's environment: the sandbox's own
    variables, thread counts included, but not the task's other variables (a login
    shell for the agent user must not inherit what a grader was given)."""
    own = config.model_copy(update={"env": {}, "pass_env": ()})
    env = base_environment(own, python, env_dir, gpus)
    env.update({k: v for k, v in config.env.items() if k in THREAD_VARIABLES})
    env.pop("SHELL", None)  # the login sets the user's own
    return env


def _system_mounts(config: BwrapConfig, trees: PrivateTrees) -> list[str]:
    if config.system_root:
        return system_root_mounts(config, trees)
    args: list[str] = []
    for d in SYSTEM_DIRS:
        args += trees.bind(d, d)
    for d in SYSTEM_LINKS_OR_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += trees.bind(d, d)
    return args


def _etc_mounts(config: BwrapConfig, dirs: SampleDirs, trees: PrivateTrees) -> list[str]:
    if config.system_root:
        return system_root_etc(config, dirs, host_network(config), trees)
    args = ["--perms", "0755", "--dir", "/etc"]
    names = ETC_FILES + (NETWORK_ETC_FILES if host_network(config) else ())
    for name in names:
        host = f"/etc/{name}"
        if os.path.islink(host) and not os.path.exists(os.path.realpath(host)):
            continue
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.exists(host):
            args += trees.bind(host, host)
    for name in ("passwd", "group", "hosts", "hostname", "profile"):
        args += ["--ro-bind", str(dirs.etc / name), f"/etc/{name}"]
    if dirs.profile_d.is_dir():
        args += ["--ro-bind", str(dirs.profile_d), "/etc/profile.d"]
    return args


def _host_folders(folders: list[str], trees: PrivateTrees | None = None) -> list[str]:
    """Host folders read-only at the same paths (those under /usr are there already)."""
    args: list[str] = []
    for folder in folders:
        if folder.startswith("/usr/"):
            continue
        for parent in reversed(Path(folder).parents[:-1]):  # traversable by the agent
            args += ["--perms", "0755", "--dir", str(parent)]
        args += trees.bind(folder, folder) if trees else ["--ro-bind", folder, folder]
    return args


def _gpu_mounts(
    gpus: tuple[Gpu, ...], system_root: bool = False, trees: PrivateTrees | None = None
) -> list[str]:
    """The device nodes of the sample's own GPUs (no other GPU's), and the driver's."""
    args: list[str] = []
    nodes = [gpu.node for gpu in gpus if gpu.node is not None and gpu.node.exists()]
    for node in [*nodes, *control_nodes()]:
        args += ["--dev-bind", str(node), f"/dev/{node.name}"]
    if system_root:
        # the root's own libraries stay; the host driver's files join them in a folder
        # of their own (on LD_LIBRARY_PATH and PATH), never the host's whole /usr/lib
        args += ["--perms", "0755", "--dir", SANDBOX_DRIVER]
        for path in driver_files():
            place = f"{SANDBOX_DRIVER}/{path.name}"
            args += trees.bind(str(path), place) if trees else ["--ro-bind", str(path), place]
    else:
        args += _host_folders([*driver_library_dirs(), *driver_tool_dirs()], trees)
    for bus in ("/sys/bus/pci", "/sys/devices"):
        if os.path.exists(bus):
            args += ["--ro-bind", bus, bus]
    return args


def hidden_paths(python: PythonLayout) -> list[str]:
    """Sandbox paths that an empty tmpfs covers (none in a system root: nothing of the
    host is there, and its own packages are the image's, as in the standard's image).

    - The interpreter's own site-packages (and Debian's dist-packages): a sandbox sees the
      packages of its task's environment, never whatever the host happens to have.
    - The labcoat package, wherever a system mount would show it: bundled graders,
      held-out data and reference solutions must not be readable in a sandbox.
    """
    if python == SYSTEM_PYTHON:
        return []
    package = Path(__file__).resolve().parents[1]
    roots = ((Path("/usr"), "/usr"), (python.host_prefix, python.sandbox_prefix))

    def in_sandbox(host: Path) -> str | None:
        for host_root, sandbox_root in roots:
            if host.is_relative_to(host_root):
                return f"{sandbox_root}/{host.relative_to(host_root)}".replace("//", "/")
        return None

    hidden: list[str] = []
    for site_dir in site.getsitepackages([sys.base_prefix]):
        path = Path(site_dir)
        mapped = in_sandbox(path.resolve()) if path.is_dir() else None
        if mapped and mapped not in hidden:
            hidden.append(mapped)
    mapped = in_sandbox(package)
    if mapped and not any(mapped.startswith(h + "/") for h in hidden):
        hidden.append(mapped)
    return hidden


def bwrap_command(
    config: BwrapConfig,
    dirs: SampleDirs,
    python: PythonLayout,
    env_dir: Path | None,
    server_source: str,
    bwrap: str = "bwrap",
    gpus: tuple[Gpu, ...] = (),
    host_paths: tuple[str, ...] = (),
    seccomp_fd: int | None = None,
) -> list[str]:
    """argv that starts the sandbox running the exec server on fd 3 (`host_paths`: what
    the environment uses of the host besides itself; `seccomp_fd`: a filter for bwrap to
    load, see `_seccomp`). The shared read-only trees are seen through overlays of the
    sample's own (`_private_trees`), mounted before bwrap starts."""
    trees = PrivateTrees(dirs.root / "trees")
    args = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "labcoat",
    ]
    if not host_network(config):
        args.append("--unshare-net")
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if separate_users():
        args += ["--cap-drop", "ALL"]
        for cap in (*ROOT_CAPS, *(("CAP_NET_RAW",) if host_network(config) else ())):
            args += ["--cap-add", cap]
    else:
        args.append("--unshare-user")
        if not nests_agent_code(config):  # a one-user grader nests the agent's code
            args.append("--disable-userns")
        args += [
            "--uid",
            str(AGENT_UID),
            "--gid",
            str(AGENT_UID),
        ]
    # parents that bwrap would otherwise create root-only
    for d in ("/home", "/opt", "/opt/labcoat", "/var"):
        args += ["--perms", "0755", "--dir", d]
    args += _system_mounts(config, trees)
    args += _etc_mounts(config, dirs, trees)
    # a sandbox that nests the agent's code keeps /proc whole: the kernel mounts a nested
    # sandbox's /proc only over one with nothing mounted on it (the nest masks its own)
    locks = [] if nests_agent_code(config) else trees.proc_args()
    args += ["--proc", "/proc", *locks, "--dev", "/dev", *trees.dev_args()]
    args += [
        # the sandbox's own POSIX message queues, visible (and removable) as files
        "--mqueue",
        "/dev/mqueue",
        "--bind",
        str(dirs.tmp),
        "/tmp",
    ]
    if not config.system_writable:  # a build's tree has its own
        args += ["--symlink", "/tmp", "/var/tmp"]
        args += ["--symlink", "/run", "/var/run"]  # as on Debian: /var/run/... is /run/...
    # memory-backed and writable: capped, so that they are no way around the disk quota
    args += _sized_tmpfs(bwrap, shm_bytes(config), "/dev/shm", "1777")
    args += _sized_tmpfs(bwrap, RUN_TMPFS_BYTES, "/run", "0755")
    # the harness's folder, the sandbox root's (made here, never the host's: rootless the
    # harness is the agent's uid in the sandbox); the proxy's socket bound in read-only
    args += ["--perms", "0755", "--dir", SANDBOX_RUN_DIR]
    if proxied_network(config) and dirs.proxy_socket.exists():
        args += ["--ro-bind", str(dirs.proxy_socket), SANDBOX_PROXY_SOCKET]
    args += ["--bind", str(dirs.home), AGENT_HOME]
    args += ["--bind", str(dirs.root_home), "/root"]
    if python.sandbox_prefix != str(python.host_prefix):
        args += trees.bind(str(python.host_prefix), python.sandbox_prefix)
    if env_dir is not None:
        args += trees.bind(str(env_dir), SANDBOX_ENV)
        args += _host_folders(list(host_paths), trees)
    args += ["--perms", "0755", "--dir", SANDBOX_BIN]
    interpreter = f"{SANDBOX_ENV}/bin/python" if env_dir is not None else python.sandbox_executable
    for name in ("python", "python3"):
        args += ["--symlink", interpreter, f"{SANDBOX_BIN}/{name}"]
    args += trees.bind(server_source, SANDBOX_SERVER)
    if nests_agent_code(config):
        args += trees.bind(_agent_jail.__file__, SANDBOX_AGENT_JAIL)
    for bind in config.binds:
        # folders bwrap makes for a mount point are root-only; made first, traversable
        # (one that exists already keeps its mode): the agent runs builds rootless
        for parent in reversed(Path(bind.target).parents[:-1]):
            args += ["--perms", "0755", "--dir", str(parent)]
        if bind.writable:  # shared on purpose: the task asked for it
            args += ["--bind", bind.source, bind.target]
        else:
            args += trees.bind(bind.source, bind.target)
    if config.gpus and gpus:
        args += _gpu_mounts(gpus, system_root=bool(config.system_root), trees=trees)
    for path in hidden_paths(python):  # empty, and read-only: no place to write
        args += ["--tmpfs", path, "--remount-ro", path]
    # the root itself (and the /etc, /opt, /home it holds) is read-only once built, and
    # so is /dev (device nodes still work; /dev/shm is a mount of its own); an image
    # build's system root stays writable (its steps install into it)
    args += ["--remount-ro", "/dev"]
    if not config.system_writable:
        args += ["--remount-ro", "/"]
    args += ["--chdir", "/", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"]
    if python.library_path:
        args += ["--setenv", "LD_LIBRARY_PATH", python.library_path]
    args = [*trees.launcher(), *args]
    mapping = mapped()
    if mapping is not None:  # bwrap starts as root of a namespace mapping the range
        args = [*mapping.launcher(), *args]
    return args

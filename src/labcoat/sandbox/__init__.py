"""The `bwrap` sandbox: bubblewrap isolation without a daemon, registered with Inspect.

Use it in a task with `sandbox=("bwrap", BwrapConfig(...))`, or on the command line with
`--sandbox bwrap`. See docs/sandbox.md.
"""

from labcoat.sandbox._command import privileged as has_separate_root
from labcoat.sandbox._command import thread_environment
from labcoat.sandbox._config import (
    AGENT_HOME,
    DEFAULT_DISK_MB,
    DEFAULT_WORKDIR,
    Bind,
    BwrapConfig,
)
from labcoat.sandbox._environment import (
    BuiltEnvironment,
    EnvironmentBuildError,
    built_environment,
    cache_dir,
    ensure_environment,
    machine_has_gpu,
)
from labcoat.sandbox._layout import give_to_agent
from labcoat.sandbox._provider import BwrapSandboxEnvironment, current_bwrap_session
from labcoat.sandbox._record import DISK_KEY, NETWORK_KEY, record_sandbox_events
from labcoat.sandbox._requirements import PythonEnv, read_requirements_file, specifiers
from labcoat.sandbox._session import BwrapSession, bwrap_path

__all__ = [
    "AGENT_HOME",
    "DEFAULT_DISK_MB",
    "DEFAULT_WORKDIR",
    "DISK_KEY",
    "NETWORK_KEY",
    "Bind",
    "BuiltEnvironment",
    "BwrapConfig",
    "BwrapSandboxEnvironment",
    "BwrapSession",
    "EnvironmentBuildError",
    "PythonEnv",
    "built_environment",
    "bwrap_path",
    "cache_dir",
    "current_bwrap_session",
    "ensure_environment",
    "give_to_agent",
    "has_separate_root",
    "machine_has_gpu",
    "read_requirements_file",
    "record_sandbox_events",
    "specifiers",
    "thread_environment",
]

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
from labcoat.sandbox._image import (
    BUILD_CONTEXT,
    BuiltImage,
    ImageBuildError,
    ImageSpec,
    ImageStep,
    built_image,
    ensure_image,
)
from labcoat.sandbox._layout import PROTECTED_GID, give_to_agent
from labcoat.sandbox._provider import BwrapSandboxEnvironment, current_bwrap_session
from labcoat.sandbox._record import DISK_KEY, NETWORK_KEY, record_sandbox_events
from labcoat.sandbox._requirements import (
    PythonEnv,
    read_requirements_file,
    requirements_from_text,
    specifiers,
)
from labcoat.sandbox._session import BwrapSession, bwrap_path

__all__ = [
    "AGENT_HOME",
    "BUILD_CONTEXT",
    "DEFAULT_DISK_MB",
    "DEFAULT_WORKDIR",
    "DISK_KEY",
    "NETWORK_KEY",
    "PROTECTED_GID",
    "Bind",
    "BuiltEnvironment",
    "BuiltImage",
    "BwrapConfig",
    "BwrapSandboxEnvironment",
    "BwrapSession",
    "EnvironmentBuildError",
    "ImageBuildError",
    "ImageSpec",
    "ImageStep",
    "PythonEnv",
    "built_environment",
    "built_image",
    "bwrap_path",
    "cache_dir",
    "current_bwrap_session",
    "ensure_environment",
    "ensure_image",
    "give_to_agent",
    "has_separate_root",
    "machine_has_gpu",
    "read_requirements_file",
    "record_sandbox_events",
    "requirements_from_text",
    "specifiers",
    "thread_environment",
]

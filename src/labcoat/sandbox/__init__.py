"""The `bwrap` sandbox: bubblewrap isolation without a daemon, registered with Inspect.

Use it in a task with `sandbox=("bwrap", BwrapConfig(...))`, or on the command line with
`--sandbox bwrap`. See docs/sandbox.md.

Layers, top to bottom. A module imports only from its own layer (without a circle) or
from those below it; tests/test_import_layers.py holds every module to this list, and a
new module joins it here:

    provider   _provider _record
    builds     _sample _gpu_pool _gpu_usage _build _image _environment _rootfs _base_python
               _resolver _pip_adapt _pip_config
    session    _session _session_requests _session_process _session_cleanup
               _channel _server _proxy _destinations
    command    _command _system_mounts _seccomp _agent_jail _private_trees
    layout     _layout _machine _userns _userns_exec _trees_exec _container _guarantees
    config     _config _image_spec _requirements _built _paths _gpus _limits _disk _writable

- config: what a sample asks for (`BwrapConfig`, environments, images), the paths
  inside a sandbox, the machine's facts (GPUs) and the mechanisms of its limits.
- layout: the host's folders (each sample's, the cache), users, the isolation mode
  (root, or rootless with separate users through a subordinate range, or one user), and the
  machine lock (timing measurements against every process's commands).
- command: the bwrap command line, its seccomp filter and the environment variables
  commands start from.
- session: a running sandbox (processes, requests, clean-up) and the services it runs
  (the exec server inside, the filtering proxy outside).
- builds: what builds on sessions: task environments, task images, the GPU pool, and
  `BwrapSession`, a sample's sandbox built and given its GPUs first, and Debian root
  file systems for images whose steps change system packages (`_rootfs`).
- provider: the Inspect sandbox provider and what it records into the sample's log.
"""

from labcoat.sandbox._base_python import TASK_PYTHON_ENV, task_python_paths
from labcoat.sandbox._build import EnvironmentBuildError
from labcoat.sandbox._built import BuiltEnvironment
from labcoat.sandbox._command import bwrap_path, thread_environment
from labcoat.sandbox._config import DEFAULT_DISK_MB, Bind, BwrapConfig
from labcoat.sandbox._container import Missing, container_signal, missing_here
from labcoat.sandbox._environment import built_environment, ensure_environment
from labcoat.sandbox._gpu_pool import GpuLease, GpuRequestError, gpu_pool
from labcoat.sandbox._gpu_usage import nvidia_smi
from labcoat.sandbox._gpus import (
    ANY_GPU_MODEL_ENV,
    Gpu,
    gpu_shortfall,
    machine_gpus,
    machine_has_gpu,
    usable_gpus,
)
from labcoat.sandbox._guarantees import (
    Guarantees,
    guarantees_here,
    namespaces_refused,
    require_sandboxes,
    weaker_isolation,
)
from labcoat.sandbox._image import BuiltImage, ImageBuildError, built_image, ensure_image
from labcoat.sandbox._image_spec import ImageSpec, ImageStep, SystemSpec
from labcoat.sandbox._layout import (
    PROTECTED_GID,
    Isolation,
    as_sandbox_root,
    cache_dir,
    chown_tree,
    copy_tree_as_root,
    give_to_agent,
    isolation,
    remove_tree,
    sandboxes_root,
)
from labcoat.sandbox._layout import separate_users as has_separate_root
from labcoat.sandbox._limits import limits_here
from labcoat.sandbox._machine import machine
from labcoat.sandbox._paths import AGENT_HOME, BUILD_CONTEXT, DEFAULT_WORKDIR
from labcoat.sandbox._pip_adapt import index_reachable
from labcoat.sandbox._provider import (
    BwrapSandboxEnvironment,
    current_bwrap_session,
    sandbox_record,
)
from labcoat.sandbox._record import (
    DISK_KEY,
    GPUS_KEY,
    GRADER_GPUS_KEY,
    NETWORK_KEY,
    grader_gpus_collected,
    record_grader_gpus,
    record_sandbox_events,
    store_grader_gpus,
)
from labcoat.sandbox._requirements import (
    PythonEnv,
    read_requirements_file,
    requirements_from_text,
    specifiers,
)
from labcoat.sandbox._resolver import resolver
from labcoat.sandbox._rootfs import SystemBuildError, built_system, system_unavailable
from labcoat.sandbox._sample import BwrapSession

__all__ = [
    "AGENT_HOME",
    "ANY_GPU_MODEL_ENV",
    "BUILD_CONTEXT",
    "DEFAULT_DISK_MB",
    "DEFAULT_WORKDIR",
    "DISK_KEY",
    "GPUS_KEY",
    "GRADER_GPUS_KEY",
    "NETWORK_KEY",
    "PROTECTED_GID",
    "TASK_PYTHON_ENV",
    "Bind",
    "BuiltEnvironment",
    "BuiltImage",
    "BwrapConfig",
    "BwrapSandboxEnvironment",
    "BwrapSession",
    "EnvironmentBuildError",
    "Gpu",
    "GpuLease",
    "GpuRequestError",
    "Guarantees",
    "ImageBuildError",
    "ImageSpec",
    "ImageStep",
    "Isolation",
    "Missing",
    "PythonEnv",
    "SystemBuildError",
    "SystemSpec",
    "as_sandbox_root",
    "built_environment",
    "built_image",
    "built_system",
    "bwrap_path",
    "cache_dir",
    "chown_tree",
    "container_signal",
    "copy_tree_as_root",
    "current_bwrap_session",
    "ensure_environment",
    "ensure_image",
    "give_to_agent",
    "gpu_pool",
    "gpu_shortfall",
    "grader_gpus_collected",
    "guarantees_here",
    "has_separate_root",
    "index_reachable",
    "isolation",
    "limits_here",
    "machine",
    "machine_gpus",
    "machine_has_gpu",
    "missing_here",
    "namespaces_refused",
    "nvidia_smi",
    "read_requirements_file",
    "record_grader_gpus",
    "record_sandbox_events",
    "remove_tree",
    "require_sandboxes",
    "requirements_from_text",
    "resolver",
    "sandbox_record",
    "sandboxes_root",
    "specifiers",
    "store_grader_gpus",
    "system_unavailable",
    "task_python_paths",
    "thread_environment",
    "usable_gpus",
    "weaker_isolation",
]

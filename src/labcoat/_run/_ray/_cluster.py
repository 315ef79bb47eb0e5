"""Connecting to Ray: a private local instance or a cluster, with the model keys in the
runtime env.

Variables that configure model providers (`*_API_KEY`, `*_BASE_URL`, ...) reach the node
processes through Ray's runtime env; they never reach a sandbox, because the bwrap sandbox
passes no host variable it is not told to name.

`--ray` without an address starts a private instance on this machine, always: never a
cluster named by `RAY_ADDRESS` or one already running here. Its node address is loopback,
so every Ray process of it listens on and connects through 127.0.0.1 only, and it requires
a token (Ray's token authentication) made for this launch, which only its own processes
hold (in their environment, never in a file).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import secrets
from types import ModuleType
from typing import Any

from labcoat._errors import LabcoatError

LOCAL = "local"
NAMESPACE = "labcoat"
# what providers read: keys, endpoints, organisations, API versions (openai-api/NAME too)
FORWARDED = re.compile(
    r"^[A-Z][A-Z0-9_]*_(API_KEY|API_TOKEN|BASE_URL|API_BASE|ORG_ID|ORGANIZATION|PROJECT"
    r"|API_VERSION|REGION)$"
)
EXTRA_ENV = "LABCOAT_RAY_ENV"
"""Comma-separated names of further variables to send to the nodes."""
SETUP_HOOK = "labcoat._run._ray._priority.run_at_node_priority"
"""Run by each of the run's workers as it starts, before it imports labcoat."""


def require_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise LabcoatError(
            "--ray needs Ray on this machine and every node: pip install 'labcoat[ray]'"
        ) from None
    return ray


def forwarded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The launcher's variables that the node processes need to call models."""
    environ = dict(os.environ if environ is None else environ)
    extra = {n.strip() for n in environ.get(EXTRA_ENV, "").split(",") if n.strip()}
    # a run's choices (--python, --any-gpu-model, ...) travel in its RunSpec, not here
    return {k: v for k, v in environ.items() if FORWARDED.match(k) or k in extra}


def check_address(address: str) -> str:
    """`local`, `auto`, `host:port` or `ray://host:port`; anything else is a usage error."""
    if address in (LOCAL, "auto") or address.startswith("ray://"):
        return address
    host, sep, port = address.rpartition(":")
    if sep and host and port.isdigit():
        return address
    raise LabcoatError(
        f"--ray {address!r}: expected an address (HOST:PORT, ray://HOST:PORT or auto); "
        "give TARGET before --ray when you mean a local Ray instance"
    )


PRIVATE_ENV = {
    # Ray's switch for "this node is not part of a network cluster": its node address is
    # loopback, and then its gRPC servers listen on loopback only
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "token",
}
"""What the launcher and the private instance's processes (they inherit it) run with."""
LOOPBACK = "127.0.0.1"


def start_private(ray: ModuleType, **kwargs: Any) -> None:
    """A new Ray instance on this machine for this process alone: loopback, with a token."""
    from ray._private import ray_constants
    from ray._raylet import (  # type: ignore[attr-defined]  # not in Ray's stubs
        AuthenticationTokenLoader,
        Config,
    )

    os.environ.pop("RAY_ADDRESS", None)  # children must not find another cluster either
    os.environ.update(PRIVATE_ENV)
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    # this process imported Ray already: what it read of the environment, it reads again
    ray_constants.ENABLE_RAY_CLUSTER = False
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    ray.init(
        address="local",
        include_dashboard=False,
        _node_ip_address=LOOPBACK,
        # Ray starts workers at nice 15: a sample would yield to every other process here
        _system_config={"worker_niceness": 0},
        **kwargs,
    )


def connect(address: str) -> ModuleType:
    """Join the cluster at `address` (or start a private local instance), once per process."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {
        "namespace": NAMESPACE,
        "runtime_env": {
            "env_vars": forwarded_env(),
            # first thing in each worker, before its imports: see `_priority`
            "worker_process_setup_hook": SETUP_HOOK,
        },
        "log_to_driver": False,
        "logging_level": logging.WARNING,
    }
    try:
        if address == LOCAL:
            start_private(ray, **kwargs)
            atexit.register(ray.shutdown)
        else:
            ray.init(address=address, **kwargs)
    except ConnectionError as ex:
        raise LabcoatError(f"--ray {address}: cannot reach the Ray cluster ({ex})") from None
    return ray

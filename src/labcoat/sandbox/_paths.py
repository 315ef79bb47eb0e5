"""Where things are inside a sandbox: the paths every layer agrees on.

Host-side folders (sample folders, the cache) are the layout layer's (`_layout`); these
are the paths a sandbox's own processes see.
"""

from __future__ import annotations

AGENT_HOME = "/home/agent"
DEFAULT_WORKDIR = f"{AGENT_HOME}/work"

SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""The system's own command folders, in PATH's usual order."""

SANDBOX_PYTHON_PREFIX = "/opt/labcoat/python"
"""A relocated host interpreter (one outside /usr) is mounted here."""
SANDBOX_BIN = "/opt/labcoat/bin"
"""First on PATH: `python`/`python3` links to the task's interpreter."""
SANDBOX_DRIVER = "/opt/labcoat/driver"
"""In a system root (`BwrapConfig.system_root`): the host GPU driver's libraries and tools."""
SANDBOX_SERVER = "/opt/labcoat/exec_server.py"
SANDBOX_AGENT_JAIL = "/opt/labcoat/agent-jail.py"
"""In a one-user grader's sandbox: runs the agent's code in a sandbox nested in it."""
AS_AGENT_ENV = "LABCOAT_AS_AGENT"
"""Set there to the command line that runs it; graders prefix the agent's commands so."""
SANDBOX_ENV = "/opt/labcoat/env"
"""The task's virtual environment (read-only in task sandboxes, written by builds)."""
PIP_MOUNT = "/opt/labcoat/pip"
"""Holds only the harness's `pip` package, for environment builds."""
PIP_CACHE_MOUNT = "/opt/labcoat/pip-cache"
BUILD_CONTEXT = "/opt/labcoat/context"
"""What an image build's steps copy from (a Dockerfile's COPY source)."""

SANDBOX_RUN_DIR = "/run/labcoat"
SANDBOX_PROXY_SOCKET = f"{SANDBOX_RUN_DIR}/proxy.sock"
SANDBOX_PROXY_PORT = 3128
"""The forwarder inside the sandbox listens on 127.0.0.1 here and relays to the socket."""

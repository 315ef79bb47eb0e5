"""The sandbox spec of a sample, for whichever provider the user picked."""

from __future__ import annotations

import hashlib
from pathlib import Path

from inspect_ai.util import SandboxEnvironmentSpec

from labcoat._errors import LabcoatError
from labcoat.sandbox import BwrapConfig, cache_dir

SANDBOX_KINDS = ("bwrap", "docker", "local")

_DOCKERFILE = """\
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 agent && mkdir -p {workdir} && chown -R agent:agent /home/agent
{pip}WORKDIR {workdir}
"""

_COMPOSE = """\
services:
  default:
    build: .
    init: true
    command: tail -f /dev/null
    working_dir: {workdir}
    user: agent
{network}    mem_limit: {memory_mb}m
"""


def docker_compose_dir(config: BwrapConfig) -> Path:
    """A compose project equivalent to `config`: an image whose pip installs the task's
    requirement lines (a requirements.txt beside the Dockerfile)."""
    lines = config.environment.requirements if config.environment is not None else ()
    requirements = "".join(f"{line}\n" for line in lines)
    pip = (
        "COPY requirements.txt /tmp/requirements.txt\n"
        "RUN pip install --no-cache-dir -r /tmp/requirements.txt\n"
        if lines
        else ""
    )
    dockerfile = _DOCKERFILE.format(workdir=config.workdir, pip=pip)
    compose = _COMPOSE.format(
        workdir=config.workdir,
        network="" if config.network else "    network_mode: none\n",
        memory_mb=config.memory_mb or 4096,
    )
    key = hashlib.sha256((dockerfile + compose + requirements).encode()).hexdigest()[:16]
    folder = cache_dir() / "docker" / key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Dockerfile").write_text(dockerfile)
    (folder / "compose.yaml").write_text(compose)
    if lines:
        (folder / "requirements.txt").write_text(requirements)
    return folder


def sample_sandbox(kind: str, config: BwrapConfig) -> SandboxEnvironmentSpec:
    if kind == "bwrap":
        return SandboxEnvironmentSpec("bwrap", config)
    if kind == "docker":
        return SandboxEnvironmentSpec("docker", str(docker_compose_dir(config) / "compose.yaml"))
    if kind == "local":
        return SandboxEnvironmentSpec("local")
    raise LabcoatError(f"unknown sandbox '{kind}' (choose from {', '.join(SANDBOX_KINDS)})")

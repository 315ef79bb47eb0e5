"""The Docker engine and labcoat's node image that tests/containers run against: found,
or the reason they are not (the tests skip with it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("LABCOAT_NODE_IMAGE", "labcoat-node:offline")
# containers/engine.sh's socket: used when DOCKER_HOST is unset and it answers there
ENGINE_SOCKET = "/run/labcoat-docker.sock"


# most powerful first: the least-privilege search drops these first, so it keeps the
# weakest set that works; the docs' table names options by these keys
OPTIONS: dict[str, tuple[str, ...]] = {
    "--cap-add SYS_ADMIN": ("--cap-add", "SYS_ADMIN"),
    "--cap-add NET_ADMIN": ("--cap-add", "NET_ADMIN"),
    "seccomp=unconfined": ("--security-opt", "seccomp=unconfined"),
    "apparmor=unconfined": ("--security-opt", "apparmor=unconfined"),
    "systempaths=unconfined": ("--security-opt", "systempaths=unconfined"),
    "--cgroupns private": ("--cgroupns", "private"),
    "--device /dev/fuse": ("--device", "/dev/fuse"),
}
PRIVILEGED = "--privileged"
MODES = {"root": "root", "separate users": "lab", "one user": "lab-one"}
"""The isolation mode a user of the image gets -> the user."""
EXPECTED_MODE = {"root": "root", "lab": "rootless-separate-users", "lab-one": "rootless-one-user"}
DOCS = REPO / "docs" / "containers.md"
BEGIN = "<!-- measured by tests/containers/test_least_privilege.py: begin -->"
END = "<!-- measured: end -->"


def documented() -> str:
    """docs/containers.md's measured tables, as the measurement writes them."""
    text = DOCS.read_text()
    assert BEGIN in text and END in text, f"{DOCS}: no measured table between {BEGIN} and {END}"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip() + "\n"


def documented_least(mode: str, hard_disk: bool = False) -> list[str] | None:
    """The docker options docs/containers.md gives `mode` (None: it says none works)."""
    for line in documented().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] == mode:
            spelled = cells[2 if hard_disk else 1]
            if spelled.startswith("none works"):
                return None
            names = re.findall(r"`([^`]+)`", spelled)
            return [arg for name in names for arg in OPTIONS[name]]
    raise AssertionError(f"{DOCS}: no least-privilege row for {mode!r}")


def docker_env() -> dict[str, str]:
    env = dict(os.environ)
    if "DOCKER_HOST" not in env and Path(ENGINE_SOCKET).is_socket():
        env["DOCKER_HOST"] = f"unix://{ENGINE_SOCKET}"
    return env


def docker(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, env=docker_env()
    )


def unavailable() -> str | None:
    """Why no container can be started here, or None."""
    if shutil.which("docker") is None:
        return "no docker CLI (apt-get install docker.io; containers/engine.sh starts dockerd)"
    try:
        version = docker("version", "--format", "{{.Server.Version}}", timeout=20)
    except subprocess.TimeoutExpired:
        return "the Docker engine did not answer within 20 s"
    if version.returncode != 0:
        last = (version.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine reachable ({last}); start one: containers/engine.sh start"
    if docker("image", "inspect", IMAGE, timeout=20).returncode != 0:
        return f"no image {IMAGE}: build it with containers/build-offline.sh (or set LABCOAT_NODE_IMAGE)"
    return None


def engine_version() -> str:
    return docker("version", "--format", "{{.Server.Version}}", timeout=20).stdout.strip()

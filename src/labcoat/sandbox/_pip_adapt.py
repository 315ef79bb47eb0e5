"""The few changes labcoat makes to a task's requirements so they install on this machine.

Each change is a note in the build's record (and the eval log), never silent:

- without a GPU, a pin to a CUDA or ROCm build (`torch==2.5.1+cu124`) becomes a pin to
  the same release (`torch==2.5.1`), and a PyTorch CUDA index becomes its CPU index;
  pip then prefers the CPU build where that index is reachable, and otherwise takes the
  release from the other indexes;
- an index or find-links URL whose host this machine cannot reach (DNS or TCP, a few
  seconds) is left out: pip would retry it for every package it looks up, and find
  nothing there anyway;
- when pip says a pinned version does not exist on the indexes it can reach, the pin
  moves to the closest version pip listed (same major.minor first, then the nearest
  newer, then the nearest older), and pip runs again.
"""

from __future__ import annotations

import functools
import re
import shlex
import socket
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from labcoat.sandbox._pip_config import host_pip_config

_ACCELERATOR_LOCAL = re.compile(r"^(cu\d+|rocm[\d.]+)$")
_TORCH_INDEX = re.compile(r"(https?://download\.pytorch\.org/whl/)(cu\d+|rocm[\d.]+)/?")
_NOT_FOUND = re.compile(
    r"Could not find a version that satisfies the requirement (?P<req>\S+) "
    r"\(from versions: (?P<versions>[^)]*)\)"
)


def without_accelerator(lines: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """Lines with CUDA/ROCm builds replaced by CPU ones, and a note per change."""
    out: list[str] = []
    notes: list[str] = []
    for line in lines:
        new = _TORCH_INDEX.sub(lambda m: f"{m.group(1)}cpu", line)
        if new != line:
            # the CPU index holds only PyTorch's packages: keep the default index too
            new = re.sub(r"^\s*(--index-url|-i)(\s+|=)", "--extra-index-url ", new)
        else:
            new = _cpu_pin(line)
        if new != line:
            notes.append(f"no GPU here: {line!r} installed as {new!r}")
        out.append(new)
    return tuple(out), notes


def _cpu_pin(line: str) -> str:
    requirement = _requirement(line)
    if requirement is None or requirement.url:
        return line
    changed = False
    specs = []
    for spec in requirement.specifier:
        version = _version(spec.version)
        accelerator = version is not None and _ACCELERATOR_LOCAL.match(version.local or "")
        if spec.operator in ("==", "===") and version is not None and accelerator:
            specs.append(f"=={version.public}")
            changed = True
            continue
        specs.append(str(spec))
    if not changed:
        return line
    rebuilt = requirement.name + (
        f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    )
    rebuilt += ",".join(specs)
    if requirement.marker is not None:
        rebuilt += f"; {requirement.marker}"
    return rebuilt


def closest_available(
    lines: tuple[str, ...], pip_output: str
) -> tuple[tuple[str, ...], str] | None:
    """When pip found no such version of a pinned requirement: the lines with that pin
    moved to the closest version pip listed, and a note; None when that does not apply."""
    match = _NOT_FOUND.search(pip_output)
    if match is None:
        return None
    wanted = _requirement(match["req"])
    if wanted is None:
        return None
    pinned = [s for s in wanted.specifier if s.operator == "=="]
    target = _version(pinned[0].version.replace(".*", "")) if len(pinned) == 1 else None
    available = [v for v in (_version(t.strip()) for t in match["versions"].split(",")) if v]
    if target is None or not available:
        return None
    choice = _closest(target, available)
    name = wanted.name.lower().replace("_", "-")
    for i, line in enumerate(lines):
        requirement = _requirement(line)
        if requirement is None or requirement.name.lower().replace("_", "-") != name:
            continue
        if not any(s.operator == "==" for s in requirement.specifier):
            continue
        rebuilt = re.sub(r"==\s*[^,;\s]+", f"=={choice}", line, count=1)
        note = f"{line!r} is not available on this machine's indexes: installed {name}=={choice}"
        return (*lines[:i], rebuilt, *lines[i + 1 :]), note
    return None


def _closest(target: Version, available: list[Version]) -> Version:
    finals = [v for v in available if not v.is_prerelease] or available
    same_minor = [v for v in finals if v.release[:2] == target.release[:2]]
    if same_minor:
        return max(same_minor)
    newer = [v for v in finals if v > target]
    if newer:
        return min(newer)
    return max(finals)


def _requirement(line: str) -> Requirement | None:
    text = line.strip()
    if not text or text.startswith("-"):
        return None
    try:
        return Requirement(shlex.split(text)[0] if " " in text and ";" not in text else text)
    except (InvalidRequirement, ValueError):
        return None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


_EXTRA_SOURCES = ("--extra-index-url", "-f", "--find-links")
REACH_TIMEOUT = 5.0


def without_unreachable_indexes(
    lines: tuple[str, ...], reachable: object = None
) -> tuple[tuple[str, ...], list[str]]:
    """Lines without the index options whose host cannot be reached, and a note per line.

    A primary index (`--index-url`) that is unreachable is kept: leaving it out would
    send pip to the default index instead of failing, which changes what is installed.
    """
    check = reachable if callable(reachable) else host_reachable
    out: list[str] = []
    notes: list[str] = []
    for line in lines:
        tokens = line.replace("=", " ", 1).split() if line.startswith("--") else line.split()
        if len(tokens) == 2 and tokens[0] in _EXTRA_SOURCES:
            url = tokens[1]
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") and parts.hostname and not check(url):
                notes.append(f"{url} cannot be reached from this machine: {line!r} left out")
                continue
        out.append(line)
    return tuple(out), notes


@functools.cache
def host_reachable(url: str) -> bool:
    """Whether a TCP connection to the URL's host and port opens within a few seconds."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=REACH_TIMEOUT):
            return True
    except OSError:
        return False


DEFAULT_INDEX = "https://pypi.org/simple"


def index_reachable() -> bool:
    """Whether pip here can reach its package index (the host's configured one, else
    PyPI); False where pip is told to use none (PIP_NO_INDEX)."""
    variables = host_pip_config().variables
    if variables.get("PIP_NO_INDEX", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = variables.get("PIP_INDEX_URL", DEFAULT_INDEX).split()[0]
    return urlsplit(url).scheme == "file" or host_reachable(url)

"""The host's pip configuration, carried into the sandbox that builds an environment.

The build runs pip inside a sandbox, which sees none of the host's files or variables.
So that pip there uses the same indexes, certificates, constraints and find-links as pip
on the host, the host's effective configuration (as `pip config list` reports it, from
every config file and PIP_* variable) is passed in as PIP_* variables, and the local
files and folders it names are made visible read-only at the same paths.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_ENTRY = re.compile(r"^(?P<section>[^.]*)\.(?P<key>[^=]+)=(?P<value>.*)$")
# settings that only concern the host's own pip run
_SKIPPED = {"require-virtualenv", "user", "target", "prefix", "root", "src", "cache-dir"}


@dataclass(frozen=True)
class PipConfig:
    variables: dict[str, str]
    """PIP_* variables for pip in the sandbox."""
    paths: tuple[Path, ...]
    """Host files and folders those settings name."""


def host_pip_config() -> PipConfig:
    """The host's effective pip configuration (read once per set of PIP_* variables: they
    are part of it)."""
    return _read_config(
        tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_")))
    )


@functools.cache
def _read_config(variables: tuple[tuple[str, str], ...]) -> PipConfig:
    # `variables` is the cache key: `pip config list` reads them from the environment
    result = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    settings: dict[str, str] = {}
    if result.returncode == 0:
        for line in result.stdout.splitlines():
            match = _ENTRY.match(line.strip())
            if not match or match["key"] in _SKIPPED:
                continue
            value = match["value"].strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            settings[match["key"]] = value  # later (more specific) sources win
    as_variables = {f"PIP_{key.upper().replace('-', '_')}": v for key, v in settings.items()}
    return PipConfig(as_variables, tuple(_local_paths(settings.values())))


def _local_paths(values: object) -> list[Path]:
    found: dict[str, Path] = {}
    for value in values:  # type: ignore[attr-defined]
        for token in str(value).split():
            path = token.removeprefix("file://") if token.startswith("file://") else token
            if not path.startswith("/") or not os.path.exists(path):
                continue
            resolved = Path(path)
            # a local "simple" index links to files beside it (../../files/x.whl)
            if resolved.name == "simple" and resolved.is_dir():
                resolved = resolved.parent
            found[str(resolved)] = resolved
    return list(found.values())

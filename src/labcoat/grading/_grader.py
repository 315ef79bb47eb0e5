"""What identifies a grader: labcoat's version and a hash of the code that grades."""

from __future__ import annotations

import hashlib
from pathlib import Path

import labcoat
from labcoat._version import __version__

SRC = Path(labcoat.__file__).resolve().parent
SHARED = ("grading", "families/_score.py", "families/_sidecar_parts.py", "sandbox")
"""Code every family's grading runs on, beside the family's own package."""


def _sources(family: str) -> list[Path]:
    paths: list[Path] = []
    for part in (f"families/{family}", *SHARED):
        root = SRC / part
        paths += [root] if root.is_file() else sorted(root.rglob("*.py"))
    return paths


def grader_version(family: str) -> dict[str, str]:
    """`{"labcoat": version, "code": sha256 of the family's and the shared grading code}`
    (a task's own grading scripts are task data: they are not in the hash)."""
    digest = hashlib.sha256()
    for path in _sources(family):
        digest.update(path.relative_to(SRC).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return {"labcoat": __version__, "code": digest.hexdigest()[:16]}


def version_label(version: dict[str, str] | None) -> str:
    if not version:
        return "?"
    return f"{version.get('labcoat', '?')}+{version.get('code', '?')}"

"""What identifies a grader: labcoat's version and a hash of the code that grades.

Here, below `families/`, so that provenance (families) and `labcoat regrade` (above
them) record the same version without either importing the other: the caller hands in
the family's code folder (`FamilySpec.code`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from labcoat._version import __version__

SRC = Path(__file__).resolve().parents[1]
SHARED = ("grading", "families/_score.py", "families/_sidecar_parts.py", "sandbox")
"""Code every family's grading runs on, beside the family's own package."""


def _sources(code: Path) -> list[tuple[str, Path]]:
    """(label, file) of the family's code and the shared grading code, in hash order.

    A family's files are labelled `families/<package>/...` wherever the package lies, so
    a family outside labcoat's tree (a plugin, a test's toy family) is hashed the same
    way as a built-in one."""
    own = [(f"families/{code.name}/{p.relative_to(code).as_posix()}", p) for p in _py(code)]
    shared = [(p.relative_to(SRC).as_posix(), p) for part in SHARED for p in _py(SRC / part)]
    return own + shared


def _py(root: Path) -> list[Path]:
    return [root] if root.is_file() else sorted(root.rglob("*.py"))


def grader_version(code: Path) -> dict[str, str]:
    """`{"labcoat": version, "code": sha256 of the family's and the shared grading code}`
    for the family whose package is the folder `code` (a task's own grading scripts are
    task data: they are not in the hash)."""
    digest = hashlib.sha256()
    for label, path in _sources(code):
        digest.update(label.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return {"labcoat": __version__, "code": digest.hexdigest()[:16]}


def version_label(version: dict[str, str] | None) -> str:
    if not version:
        return "?"
    return f"{version.get('labcoat', '?')}+{version.get('code', '?')}"

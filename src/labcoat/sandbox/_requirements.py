"""What a task asks of its Python environment: lines of a pip requirements file.

labcoat does not interpret pip's syntax: pip installs the lines, with every option pip
knows (`--extra-index-url`, `-f`, `git+https://...`, markers, hashes, local versions).
Reading a file only makes it self-contained, so that environments from different folders
can be combined and cached by their content:

- continuation lines are joined and comments dropped (as pip does);
- `-r FILE` is replaced by FILE's lines (pip's own meaning of `-r`), recursively;
- relative paths (`-c FILE`, `-f DIR`, `./pkg`, `file:../pkg`) become absolute, since pip
  resolves them against a working directory that is no longer the file's;
- `-e LOCAL_PATH` becomes a regular install of that path: a built environment is
  read-only, and an editable install would need to write into the task's folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path

from pydantic import BaseModel

from labcoat._errors import TaskDataError
from labcoat._util.content_hash import path_digest

# options whose value is a local file or folder when it is not a URL
_PATH_OPTIONS = ("-c", "--constraint", "-f", "--find-links")
_INCLUDE_OPTIONS = ("-r", "--requirement")
_EDITABLE_OPTIONS = ("-e", "--editable")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_COMMENT = re.compile(r"(^|\s+)#.*$")


class PythonEnv(BaseModel, frozen=True):
    """The Python environment of a task's sandboxes, as pip requirement-file lines."""

    requirements: tuple[str, ...] = ()
    """Lines of a requirements file, in pip's syntax (options included)."""

    python: str | None = None
    """The Python version the task's own definition names ("3.11"), when it names one.
    Sandboxes run the harness's interpreter; a different version is noted, not met."""

    sources: tuple[str, ...] = ()
    """Files the lines came from, for messages."""

    uploaded_prior_to: str | None = None
    """Resolve as of this date (ISO 8601; pip's `--uploaded-prior-to`): releases uploaded
    later are not considered, on indexes that record upload times (PyPI does). Keeps an
    old environment's unpinned lines from resolving to today's releases."""

    @property
    def empty(self) -> bool:
        return not self.requirements

    def plus(self, other: PythonEnv) -> PythonEnv:
        """Both environments' lines (ours first), without repeating a line."""
        return PythonEnv(
            requirements=tuple(dict.fromkeys([*self.requirements, *other.requirements])),
            python=self.python or other.python,
            uploaded_prior_to=self.uploaded_prior_to or other.uploaded_prior_to,
            sources=tuple(dict.fromkeys([*self.sources, *other.sources])),
        )

    def describe(self) -> str:
        if self.sources:
            return ", ".join(self.sources)
        return ", ".join(self.requirements) if self.requirements else "no packages"

    def local_paths(self) -> list[Path]:
        """Host files and folders the lines refer to (pip must see them while building)."""
        paths: list[Path] = []
        for line in self.requirements:
            for token in _tokens(line):
                candidate = token.removeprefix("file://") if token.startswith("file://") else token
                if candidate.startswith("/") and os.path.exists(candidate):
                    paths.append(Path(candidate))
        return paths

    def content_digest(self) -> str:
        """A digest of the lines and of the contents of the local files and folders they
        name (`labcoat._util.content_hash`: a rebuilt wheel of the same size changes it, a
        `touch` or a `git fetch` in a local package's checkout does not)."""
        h = hashlib.sha256()
        if self.uploaded_prior_to:
            h.update(f"--uploaded-prior-to {self.uploaded_prior_to}\n".encode())
        for line in self.requirements:
            h.update(line.encode() + b"\n")
        for path in self.local_paths():
            h.update(str(path).encode())
            h.update(path_digest(path).encode())
        return h.hexdigest()


def specifiers(*lines: str) -> PythonEnv:
    """An environment from requirement specifiers given directly (a sidecar's list)."""
    return PythonEnv(requirements=tuple(line.strip() for line in lines if line.strip()))


def read_requirements_file(path: Path) -> PythonEnv:
    """The lines of a pip requirements file, self-contained (see the module's docstring)."""
    lines = _read_lines(path.resolve(), seen=())
    return PythonEnv(requirements=tuple(lines), sources=(str(path),))


def requirements_from_text(text: str, base: Path, source: str) -> PythonEnv:
    """Requirement-file lines given as text (a conda file's `pip:` list), read as a file
    in the folder `base` would be: relative paths and `-r` files resolve from `base`."""
    lines = _parse_lines(text, base.resolve() / "<requirements>", seen=())
    return PythonEnv(requirements=tuple(lines), sources=(source,))


def _read_lines(path: Path, seen: tuple[Path, ...]) -> list[str]:
    if path in seen:
        raise TaskDataError(seen[-1], None, f"-r {path}: includes itself (a cycle of -r files)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskDataError(path, f"byte {exc.start}", "not UTF-8 text") from None
    except OSError as exc:
        raise TaskDataError(path, None, f"cannot read: {exc.strerror}") from None
    return _parse_lines(text, path, seen)


def _parse_lines(text: str, path: Path, seen: tuple[Path, ...]) -> list[str]:
    out: list[str] = []
    for number, line in _logical_lines(text):
        try:
            tokens = shlex.split(line, posix=True)
        except ValueError as exc:
            raise TaskDataError(path, f"line {number}", f"cannot read {line!r}: {exc}") from None
        if not tokens:
            continue
        option, value = _option(tokens)
        if option in _INCLUDE_OPTIONS and value:
            out.extend(_read_lines(_resolve(path.parent, value), (*seen, path)))
        elif option in _PATH_OPTIONS and value and not _URL.match(value):
            out.append(f"{option} {_quote(str(_resolve(path.parent, value)))}")
        elif option in _EDITABLE_OPTIONS and value and _is_local(value):
            out.append(_quote(_absolute_local(path.parent, value)))
        elif option is None and _is_local(tokens[0]):
            rest = line[len(tokens[0]) :] if line.startswith(tokens[0]) else ""
            out.append(_quote(_absolute_local(path.parent, tokens[0])) + rest)
        else:
            out.append(line)
    return out


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each line, continuations joined, comments dropped."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if raw.endswith("\\"):
            pending.append(raw[:-1])
            continue
        pending.append(raw)
        line = _COMMENT.sub("", "".join(pending)).strip()
        pending = []
        if line:
            out.append((start, line))
    if pending:
        line = _COMMENT.sub("", "".join(pending)).strip()
        if line:
            out.append((start, line))
    return out


def _option(tokens: list[str]) -> tuple[str | None, str | None]:
    """The option a line starts with and its value (`-r x`, `-rx`, `--requirement=x`)."""
    first = tokens[0]
    if not first.startswith("-"):
        return None, None
    if first.startswith("--") and "=" in first:
        name, value = first.split("=", 1)
        return name, value
    if not first.startswith("--") and len(first) > 2:
        return first[:2], first[2:]
    return first, tokens[1] if len(tokens) > 1 else None


def _is_local(value: str) -> bool:
    if value.startswith("file:"):
        return not value.startswith("file:///") and not value.startswith("file://localhost/")
    return value.startswith((".", "/", "~"))


def _absolute_local(base: Path, value: str) -> str:
    extras = ""
    if value.startswith("file:"):
        value = value.removeprefix("file:")
    match = re.match(r"^(.*?)(\[[^\]]*\])?$", value)
    if match and match.group(2):
        value, extras = match.group(1), match.group(2)
    return str(_resolve(base, value)) + extras


def _resolve(base: Path, value: str) -> Path:
    return (base / os.path.expanduser(value)).resolve()


def _quote(text: str) -> str:
    return shlex.quote(text)


def _tokens(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()

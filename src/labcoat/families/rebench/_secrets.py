"""A task family's `required_environment_variables`: where their values come from.

Values come from a secrets file (`--secrets FILE`, `.env` syntax, read by python-dotenv)
and else from the environment labcoat runs in, as METR's task bridge reads them. They are
given to the family's own code (install, setup, start, scoring, teardown) and never to
the agent's sandbox or the log.
"""

from __future__ import annotations

import ast
import io
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.sync import run_sync
from labcoat._util.text_file import read_bytes

MAX_SECRETS_BYTES = 1024 * 1024
T = TypeVar("T")

# the secrets file named on the command line: the CLI runs one command per process
_files: list[Path] = []
# a `rebench(secrets=FILE)` call's file, while that call discovers and builds its samples
# (its samples then carry the path: `SampleTask.secrets_files`)
_scoped: ContextVar[tuple[Path, ...]] = ContextVar("labcoat_secrets_files", default=())


def secrets_file(path: str | Path) -> Path:
    """`path`, checked to be a secrets file, resolved."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise LabcoatError(f"--secrets {path}: no such file")
    check_secrets_file(Path(path).expanduser())  # named as given
    return file


def use_secrets_file(path: str | Path | None) -> None:
    """Read secrets from `path` (in addition to the environment) for the rest of this
    process, in every task (what `--secrets FILE` does on the command line)."""
    if path is None:
        return
    file = Path(path).expanduser().resolve()
    if file not in _files:
        _files.append(secrets_file(path))


def scoped_secrets_files() -> tuple[Path, ...]:
    """The files the `reading_secrets_file` blocks around this call added."""
    return _scoped.get()


@contextmanager
def reading_secrets_file(path: str | Path | None) -> Iterator[None]:
    """Read secrets from `path` too within this block (a thread started in it does not
    see it: `run_with_secrets_files` carries it there)."""
    files = _scoped.get()
    if path is not None and (file := secrets_file(path)) not in files:
        files = (*files, file)
    token = _scoped.set(files)
    try:
        yield
    finally:
        _scoped.reset(token)


def run_with_secrets_files(fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """`run_sync(fn, *args)`, reading the secrets files of the blocks around this call."""
    return run_sync(_with_files, _scoped.get(), fn, *args)


async def _with_files(files: tuple[Path, ...], fn: Callable[..., Awaitable[T]], *args: object) -> T:
    token = _scoped.set(files)
    try:
        return await fn(*args)
    finally:
        _scoped.reset(token)


def check_secrets_file(file: Path) -> None:
    """`file` is a `.env` file: text, each statement `KEY=VALUE` (or `export KEY=VALUE`, a
    comment, a blank line); else a TaskDataError naming the file and the line."""
    data = read_bytes(file, MAX_SECRETS_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as ex:
        line = data.count(b"\n", 0, ex.start) + 1
        raise TaskDataError(
            file, f"line {line}", "not UTF-8 text (a secrets file holds KEY=VALUE lines)"
        ) from None
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise TaskDataError(
                file, f"line {binding.original.line}", "expected KEY=VALUE (a .env file)"
            )


def _file_values(files: tuple[Path, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    for file in dict.fromkeys((*_files, *_scoped.get(), *files)):
        try:
            parsed = dotenv_values(file)
        except (OSError, ValueError) as ex:
            raise TaskDataError(file, None, f"cannot read secrets: {ex}") from None
        values.update({k: v for k, v in parsed.items() if v is not None})
    return values


def secret_values(
    names: list[str] | tuple[str, ...], files: tuple[Path, ...] = ()
) -> tuple[dict[str, str], list[str]]:
    """({name: value} for the names found, [names missing]): from the secrets files in
    use (`files` last, so they win), else from the environment."""
    from_file = _file_values(files) if names else {}
    found: dict[str, str] = {}
    missing: list[str] = []
    for name in names:
        if name in from_file:
            found[name] = from_file[name]
        elif name in os.environ:
            found[name] = os.environ[name]
        else:
            missing.append(name)
    return found, missing


def declared_secrets(module: Path) -> list[str]:
    """`TaskFamily.required_environment_variables` as written in the family's source, when
    it is a literal list (enough to find missing secrets before running anything)."""
    try:
        tree = ast.parse(module.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TaskFamily":
            for item in node.body:
                target: ast.expr | None = None
                assigned: ast.expr | None = None
                if isinstance(item, ast.Assign) and len(item.targets) == 1:
                    target, assigned = item.targets[0], item.value
                elif isinstance(item, ast.AnnAssign):
                    target, assigned = item.target, item.value
                if (
                    isinstance(target, ast.Name)
                    and target.id == "required_environment_variables"
                    and assigned is not None
                ):
                    try:
                        value = ast.literal_eval(assigned)
                    except ValueError:
                        return []
                    return [str(v) for v in value] if isinstance(value, list | tuple) else []
    return []


class MissingSecretsError(LabcoatError):
    """A family's required environment variables are not all set: nothing runs."""

    def __init__(self, where: str, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(
            f"{where} needs these environment variables, which are not set: "
            f"{', '.join(missing)} (set them in the environment or pass --secrets FILE)"
        )

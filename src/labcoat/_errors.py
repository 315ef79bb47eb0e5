"""Errors that the CLI turns into one clear line and exit code 2."""

from __future__ import annotations

from pathlib import Path


class LabcoatError(Exception):
    """An error the user can act on; printed without a traceback."""


class TaskDataError(LabcoatError):
    """Bad task data: names the file and the field that is wrong."""

    def __init__(self, file: str | Path, field: str | None, message: str) -> None:
        self.file = str(file)
        self.field = field
        self.message = message
        where = f"{self.file}: {field}" if field else self.file
        super().__init__(f"{where}: {message}")


class MissingDependencyError(LabcoatError):
    """A program or package labcoat needs is not installed."""


class Interrupted(Exception):
    """A run stopped by Ctrl-C or SIGTERM; the message says what was kept."""


def one_line(text: object) -> str:
    """A message as one line: its line breaks gone, every other character as it was (a
    `[/path]` in a message is text, never markup)."""
    return " ".join(str(text).split())


def without_markup(message: object) -> str:
    """A message written in rich markup (Inspect's PrerequisiteError messages: `[bold]`,
    `[/bold]`) as plain text; text that is not valid markup stays as it is, and a rich
    renderable instead of text (Inspect allows one) is said as its str()."""
    from rich.errors import MarkupError
    from rich.text import Text

    text = message if isinstance(message, str) else str(message)
    try:
        return Text.from_markup(text).plain
    except MarkupError:
        return text

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
    """A message as one line (rich markup and line breaks of other tools' messages gone)."""
    message = str(text)
    if "[/" in message:  # rich markup, as in Inspect's PrerequisiteError messages
        from rich.text import Text

        message = Text.from_markup(message).plain
    return " ".join(message.split())

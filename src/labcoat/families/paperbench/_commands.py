"""What the check judge asks a command runner for, and what it gets back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

MAX_OUTPUT_CHARS = 20_000


@dataclass(frozen=True)
class CommandRequest:
    """A check's bash script, run at the root of one view: `submission`, `executed` or
    `rerun` (the executed copy of the second, re-seeded reproduction)."""

    command: str
    where: str
    timeout: float


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False


CommandRunner = Callable[[CommandRequest], Awaitable[CommandResult]]

"""Silence rich's global console while an eval runs, for commands whose table is the output."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_console(quiet: bool = True) -> Iterator[None]:
    """Inspect keeps its first display for the whole process and applies
    `display="none"` only when it creates it, so after an earlier eval in the same
    process (a test, a notebook) its panels would still print: rich's console is muted."""
    if not quiet:
        yield
        return
    import rich

    console = rich.get_console()
    before, console.quiet = console.quiet, True
    try:
        yield
    finally:
        console.quiet = before

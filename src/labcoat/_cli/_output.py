"""Keeping stdout for the one thing a command promises there (`--json`)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from rich.console import Console, RenderableType
from rich.measure import Measurement


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool = True) -> Iterator[None]:
    """While a `--json` command works, whatever else writes to stdout (Inspect's display
    and log panels, rich consoles, child processes) goes to stderr, so stdout ends up
    holding only the JSON printed afterwards."""
    if not enabled:
        yield
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no real descriptors (embedded use): the Python-level redirect suffices
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def whole_table_console(table: RenderableType, *, markup: bool = False) -> Console:
    """A console for `table`: in a terminal, its width; in a pipe or a file, wide enough
    for every column (a pipe has no width, and rich would fold or cut columns at 80).

    Its text (the table's cells and title, what `print` is given) is plain: task ids,
    paths and reasons hold brackets (`[/a/requirements.txt]`) that are not markup.
    `markup=True` only for a caller that writes markup and escapes all else itself."""
    console = Console(markup=markup)
    if not console.is_terminal:
        unbounded = console.options.update_width(1_000_000)
        console.width = max(console.width, Measurement.get(console, unbounded, table).maximum)
    return console


def print_table(table: RenderableType, *, markup: bool = False) -> None:
    whole_table_console(table, markup=markup).print(table)

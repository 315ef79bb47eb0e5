"""The one printer of the CLI's message lines (errors, notes) on stderr.

Every message holds text from outside labcoat (paths, task ids, a family's output, pip's
reasons), so it is printed as plain text: nothing in it is markup (`[/a/requirements.txt]`
is text), no character of it can break the line, and printing it cannot fail.
"""

from __future__ import annotations

import click

from labcoat._util.names import error_line


def say(message: object) -> None:
    """`labcoat: MESSAGE` on stderr, as the one line error_line() makes of it."""
    click.echo(f"labcoat: {error_line(message)}", err=True)

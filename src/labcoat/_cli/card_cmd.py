"""`labcoat card LOGDIR... [-o card.md]`: the results card as Markdown, for an appendix."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat._errors import LabcoatError
from labcoat._util.remote import credentials_named


def _warn(message: str) -> None:
    click.echo(f"labcoat card: warning: skipped {message}", err=True)


@click.command("card")
@click.argument("log_dirs", nargs=-1, required=True, metavar="LOGDIR...")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the Markdown to this file instead of printing it.",
)
def command(log_dirs: tuple[str, ...], output: Path | None) -> None:
    """Print the results card of the .eval logs in LOGDIR (folders, files or fsspec
    URLs) as Markdown: what ran, where, under which versions, hashes and budgets, and
    whether runs of one task mix task contents, graders, judges or hardware."""
    from labcoat.analysis import read_runs  # pandas loads only for this command
    from labcoat.report._card import card_markdown

    for src in log_dirs:
        if "://" not in src and not Path(src).exists():
            raise LabcoatError(f"{src}: no such file or directory")
    with credentials_named(log_dirs):
        data = read_runs(list(log_dirs), warn=_warn)
    if data.logs.empty:
        raise LabcoatError(f"no readable .eval logs found in {', '.join(log_dirs)}")
    text = card_markdown(data)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as ex:
        raise LabcoatError(f"{output}: cannot write the card ({ex.strerror})") from None
    click.echo(f"card: {output}", err=True)

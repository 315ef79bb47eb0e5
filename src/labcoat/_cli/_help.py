"""`--help` in sections, common options first, instead of one flat list."""

from __future__ import annotations

from typing import Any

import click

Sections = tuple[tuple[str, tuple[str, ...]], ...]
"""(heading, the parameters' Python names in order): an option in no section is listed
under "Other options", so one added later still shows."""


class SectionedCommand(click.Command):
    """A command whose options' help comes in the given sections."""

    def __init__(self, *args: Any, sections: Sections = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = sections

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {}
        for param in self.get_params(ctx):
            if not isinstance(param, click.Option):  # arguments are in the usage line
                continue
            record = param.get_help_record(ctx)
            if record is not None:  # hidden options have none
                records[param.name] = record
        for heading, names in self.sections:
            rows = [records.pop(n) for n in names if n in records]
            if rows:
                with formatter.section(heading):
                    formatter.write_dl(rows)
        if records:
            with formatter.section("Other options"):
                formatter.write_dl(list(records.values()))

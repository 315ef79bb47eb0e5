"""The `labcoat` command. Each subcommand lives in its own module, listed below."""

from __future__ import annotations

import importlib
import sys

import click

from labcoat._errors import LabcoatError
from labcoat._version import __version__

# Modules that each define a click command (or group) named `command`.
COMMAND_MODULES = [
    "labcoat._cli.list_cmd",
    "labcoat._cli.eval_cmd",
    "labcoat._cli.validate_cmd",
    "labcoat._cli.check_cmd",
    "labcoat._cli.rubric_cmd",
    "labcoat._cli.researchcodebench_cmd",
    "labcoat._cli.judge_eval_cmd",
    "labcoat._cli.report_cmd",
    "labcoat._cli.inspect_cmd",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="labcoat")
def cli() -> None:
    """Measure how well AI agents do real AI research."""


for _module in COMMAND_MODULES:
    cli.add_command(importlib.import_module(_module).command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user-facing errors become one line on stderr and exit code 2."""
    try:
        cli.main(args=argv, prog_name="labcoat", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("labcoat: aborted", err=True)
        sys.exit(130)
    except click.ClickException as ex:
        ex.show()
        sys.exit(2 if isinstance(ex, click.UsageError) else ex.exit_code)
    except click.exceptions.Exit as ex:
        sys.exit(ex.exit_code)
    except LabcoatError as ex:
        click.echo(f"labcoat: error: {ex}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("labcoat: interrupted", err=True)
        sys.exit(130)

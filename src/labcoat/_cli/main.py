"""The `labcoat` command. Each subcommand lives in its own module, imported when used.

The error contract, for every command: a problem in the user's input (an option, a file,
task data, a LABCOAT_* variable, a full disk or a read-only folder) is one line on stderr
naming what is wrong, and exit code 2; an interrupt (Ctrl-C, SIGTERM) says so and exits
130 (143 for SIGTERM); anything unexpected is one line and exit 1. Tracebacks only with
`--debug` (or LABCOAT_DEBUG=1).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from labcoat._cli._oserror import user_os_error
from labcoat._cli._say import say
from labcoat._errors import Interrupted, LabcoatError, without_markup
from labcoat._util.env import check_environment
from labcoat._util.exit_now import EXIT_SIGINT, exit_at_another_interrupt
from labcoat._version import __version__

# name -> (module defining a click command named `command`, one-line help). The help is
# here so `labcoat --help` does not import every command (and Inspect) to print it.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("labcoat._cli.list_cmd", "List the tasks in TARGET."),
    "eval": ("labcoat._cli.eval_cmd", "Run agents on the tasks in TARGET."),
    "attach": ("labcoat._cli.attach_cmd", "Open the shell of a task waiting for a person."),
    "validate": ("labcoat._cli.validate_cmd", "Check every task: oracle ≈ 1, noop ≈ 0."),
    "check": ("labcoat._cli.check_cmd", "Preflight: what would stop each task."),
    "report": ("labcoat._cli.report_cmd", "One HTML report from .eval logs."),
    "card": ("labcoat._cli.card_cmd", "The results card of .eval logs, as Markdown."),
    "rubric": ("labcoat._cli.rubric_cmd", "PaperBench rubric statistics."),
    "judge-eval": ("labcoat._cli.judge_eval_cmd", "How well a PaperBench judge agrees."),
    "researchcodebench": ("labcoat._cli.researchcodebench_cmd", "ResearchCodeBench tools."),
    "inspect": ("labcoat._cli.inspect_cmd", "Suspected cheating in each run, with evidence."),
    "regrade": ("labcoat._cli.regrade_cmd", "Grade kept final workspaces again."),
}

EXIT_USAGE = 2
EXIT_SIGTERM = 143


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        return importlib.import_module(COMMANDS[name][0]).command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, text) for name, (_, text) in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="labcoat")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """Measure how well AI agents do real AI research."""
    check_environment()  # a LABCOAT_* variable it cannot use: one line now, not mid-run


class _Signals:
    """SIGTERM is handled like Ctrl-C (the run is cancelled, sandboxes torn down, logs
    marked cancelled), and remembered so the exit code can say which it was."""

    def __init__(self) -> None:
        self.received: int | None = None

    def _on_term(self, signum: int, frame: Any) -> None:
        self.received = signum
        # whatever handles Ctrl-C now (asyncio's: cancel the run, clean up, then raise
        # KeyboardInterrupt); called directly, as SIGINT itself may be ignored (a job
        # started in the background by a shell)
        on_int = signal.getsignal(signal.SIGINT)
        if callable(on_int):
            on_int(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    @contextmanager
    def handled(self) -> Iterator[None]:
        try:
            previous = signal.signal(signal.SIGTERM, self._on_term)
        except ValueError:  # not the main thread (embedded use): leave signals alone
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)

    def exit_code(self) -> int:
        return EXIT_SIGTERM if self.received == signal.SIGTERM else EXIT_SIGINT


def _debug_wanted(args: list[str]) -> bool:
    return os.environ.get("LABCOAT_DEBUG") == "1" or "--debug" in args


def main(argv: list[str] | None = None) -> None:
    """Entry point: the error contract above, then exit."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_wanted(args)
    signals = _Signals()

    def fail(message: str, code: int) -> None:
        if code in (EXIT_SIGINT, EXIT_SIGTERM):
            exit_at_another_interrupt(code)
        if debug:
            traceback.print_exc()
        say(message)
        sys.exit(code)

    try:
        with signals.handled():
            cli.main(args=args, prog_name="labcoat", standalone_mode=False)
    except click.exceptions.Exit as ex:
        sys.exit(ex.exit_code)
    except click.exceptions.NoArgsIsHelpError as ex:  # `labcoat`, `labcoat rubric`: help
        click.echo(ex.ctx.get_help())
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort:
        fail("interrupted", signals.exit_code())
    except click.ClickException as ex:
        # UsageError and its kind carry the command they were raised in; others do not
        ctx = getattr(ex, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx else ""
        code = EXIT_USAGE if isinstance(ex, click.UsageError) else ex.exit_code
        fail(f"error: {ex.format_message()}{where}", code)
    except Interrupted as ex:
        fail(f"interrupted: {ex}", signals.exit_code())
    except KeyboardInterrupt:
        fail("interrupted", signals.exit_code())
    except LabcoatError as ex:
        fail(f"error: {ex}", EXIT_USAGE)
    except BrokenPipeError:  # `labcoat list mini | head`: the reader left; nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        sys.exit(1)
    except Exception as ex:
        from inspect_ai._util.error import PrerequisiteError

        if isinstance(ex, OSError) and (line := user_os_error(ex)):
            fail(f"error: {line}", EXIT_USAGE)  # a full disk, a read-only folder: the user's
        if isinstance(ex, PrerequisiteError):  # Inspect: a missing package, key or setting
            fail(f"error: {without_markup(ex.message)}", EXIT_USAGE)  # Inspect writes markup
        fail(
            f"internal error: {type(ex).__name__}: {ex} (run with --debug for the traceback)",
            1,
        )

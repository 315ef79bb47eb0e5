"""`labcoat attach [SESSION]`: open the shell of a session waiting for a person."""

from __future__ import annotations

import time

import click

from labcoat._errors import LabcoatError
from labcoat.agents.human._attach import attach, pick, write_line
from labcoat.agents.human._sessions import LiveSession, live_sessions

POLL_SECONDS = 0.5


def wait_for_session(wanted: str | None, run: str | None, wait: float) -> LiveSession:
    """The session to attach to, waiting up to `wait` seconds for one to open."""
    deadline = time.monotonic() + wait
    while True:
        sessions = live_sessions(run)
        try:
            return pick(sessions, wanted)
        except LabcoatError:
            if time.monotonic() >= deadline or len(sessions) > 1:
                raise
        time.sleep(POLL_SECONDS)


@click.command("attach")
@click.argument("session", required=False)
@click.option("--list", "as_list", is_flag=True, help="List the sessions waiting for a person.")
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="Wait this long for a session to open.",
)
def command(session: str | None, as_list: bool, wait: float) -> None:
    """Work a task in its sandbox: the shell of a session `--agent human` opened.

    Closing the terminal (or Ctrl-]) detaches; the session goes on until `task submit`
    or its time budget, and `labcoat attach` returns to it.
    """
    if as_list:
        for s in live_sessions():
            click.echo(f"{s.id}  {s.sample} (epoch {s.epoch})  since {time.ctime(s.started)}")
        return
    chosen = wait_for_session(session, None, wait)
    write_line(f"labcoat: {attach(chosen)}")

"""`labcoat attach [TARGET]`: open the shell of a session waiting for a person, named by
its id or its eval (log folder, run id); with no name, an eval's whose log folder is here."""

from __future__ import annotations

import time

import click

from labcoat.agents.human._attach import NotOneSession, attach, describe, pick, write_line
from labcoat.agents.human._sessions import LiveSession, live_sessions

POLL_SECONDS = 0.5


def wait_for_session(wanted: str | None, wait: float) -> LiveSession:
    """The session to attach to, waiting up to `wait` seconds for the one named to open
    (a choice between several is refused at once: waiting would not make it)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return pick(live_sessions(), wanted)
        except NotOneSession as ex:
            if time.monotonic() >= deadline or ex.ambiguous:
                for session in ex.sessions:
                    click.echo(describe(session), err=True)
                raise
        time.sleep(POLL_SECONDS)


@click.command("attach")
@click.argument("target", required=False)
@click.option("--list", "as_list", is_flag=True, help="List the sessions waiting for a person.")
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="Wait this long for a session to open.",
)
def command(target: str | None, as_list: bool, wait: float) -> None:
    """Work a task in its sandbox: the shell of a session `--agent human` opened.

    TARGET names the session: its id (as the eval prints it), or its eval's log folder
    or run id. Without TARGET, the one session of an eval whose log folder is in the
    current folder; otherwise the sessions are listed and none is taken.

    Closing the terminal (or Ctrl-]) detaches; the session goes on until `task submit`
    or its time budget, and `labcoat attach TARGET` returns to it.
    """
    if as_list:
        for s in live_sessions():
            click.echo(f"{describe(s)}  since {time.ctime(s.started)}")
        return
    chosen = wait_for_session(target, wait)
    write_line(f"labcoat: {attach(chosen)}")

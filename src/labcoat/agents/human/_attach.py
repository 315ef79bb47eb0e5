"""`labcoat attach`: this terminal becomes the person's shell in a session's sandbox.

Only the terminal is relayed: the shell runs in the sandbox, under the terminal server
the eval started, so closing this terminal (a dropped SSH connection) detaches without
ending anything. Ctrl-] detaches on purpose.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys
import termios
import tty
from collections.abc import Iterator
from pathlib import Path

from labcoat._errors import LabcoatError
from labcoat.agents.human._sessions import LiveSession

DETACH = b"\x1d"  # Ctrl-]


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def _window(fd: int) -> bytes:
    try:
        size = os.get_terminal_size(fd)
        rows, cols = size.lines, size.columns
    except OSError:
        rows, cols = 24, 80
    return frame(b"w", json.dumps({"rows": rows, "cols": cols}).encode())


@contextlib.contextmanager
def _raw(fd: int) -> Iterator[None]:
    if not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def attach(session: LiveSession, stdin: int = 0, stdout: int = 1) -> str:
    """Relay this terminal to the session's shell until the session ends or the person
    detaches; returns why it stopped."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(session.terminal)
    except OSError as ex:
        raise LabcoatError(f"cannot reach session {session.id} ({session.terminal}): {ex}") from ex
    write_line(f"labcoat: attached to {session.sample} (epoch {session.epoch}); Ctrl-] detaches")
    resized = [True]
    previous = signal.signal(signal.SIGWINCH, lambda *_: resized.__setitem__(0, True))
    try:
        with _raw(stdin):
            return _relay(conn, stdin, stdout, resized)
    finally:
        signal.signal(signal.SIGWINCH, previous)
        conn.close()


def _relay(conn: socket.socket, stdin: int, stdout: int, resized: list[bool]) -> str:
    watching: list[socket.socket | int] = [conn, stdin]
    while True:
        if resized[0]:
            resized[0] = False
            conn.sendall(_window(stdin))
        try:
            ready, _, _ = select.select(watching, [], [], 0.5)
        except InterruptedError:
            continue
        if conn in ready:
            data = conn.recv(65536)
            if not data:
                return "the session closed the terminal"
            os.write(stdout, data)
        if stdin in ready:
            data = os.read(stdin, 65536)
            if not data:  # end of input (not a terminal): keep showing until the end
                watching = [conn]
                continue
            if DETACH in data and os.isatty(stdin):
                before = data.split(DETACH, 1)[0]
                if before:
                    conn.sendall(frame(b"d", before))
                return "detached"
            conn.sendall(frame(b"d", data))


class NotOneSession(LabcoatError):
    """`labcoat attach` did not name exactly one session; `sessions` are those there are
    (or those named), which the command lists before the error's hint."""

    def __init__(self, message: str, sessions: list[LiveSession], ambiguous: bool) -> None:
        super().__init__(message)
        self.sessions = sessions
        self.ambiguous = ambiguous
        """Several match: waiting for more sessions cannot make it one."""


HINT = "name one: `labcoat attach ID` or `labcoat attach LOGDIR` (the eval's --log-dir)"


def pick(sessions: list[LiveSession], wanted: str | None, here: str | None = None) -> LiveSession:
    """The one session `wanted` names (see `LiveSession.belongs_to`). With no name, the
    one session of an eval whose log folder is in `here` (the current folder: an eval
    started here with the default `--log-dir logs`), never a session for being the only
    one waiting (another eval's, perhaps another person's). Anything else is refused,
    with the sessions there are."""
    if wanted is not None:
        matches = [s for s in sessions if s.belongs_to(wanted)]
        if not matches:
            raise NotOneSession(
                f"no waiting session belongs to {wanted!r} (a session id, or an eval's log "
                "folder or run id; `labcoat attach --list` shows them)",
                sessions,
                ambiguous=False,
            )
        if len(matches) > 1:
            raise NotOneSession(
                f"{len(matches)} sessions belong to {wanted!r}: {HINT}", matches, ambiguous=True
            )
        return matches[0]
    here = os.getcwd() if here is None else here
    mine = [s for s in sessions if s.log_dir and _log_dir_in(s.log_dir, here)]
    if len(mine) == 1:
        return mine[0]
    if len(mine) > 1:
        raise NotOneSession(f"{len(mine)} sessions are waiting here: {HINT}", mine, True)
    if not sessions:
        raise NotOneSession(
            "no session is waiting for a person (start one with --agent human)", [], False
        )
    raise NotOneSession(
        f"no waiting session is of an eval whose log folder is in {here} "
        f"({len(sessions)} waiting elsewhere): {HINT}",
        sessions,
        ambiguous=False,
    )


def _log_dir_in(log_dir: str, folder: str) -> bool:
    """Whether an eval's (local, absolute) log folder lies in `folder`."""
    if "://" in log_dir:
        return False
    inside, where = Path(log_dir), Path(os.path.realpath(folder))
    return inside == where or where in inside.parents


def describe(session: LiveSession) -> str:
    """One line of `labcoat attach --list`: the id, the sample, the eval's log folder."""
    where = f"  logs {session.log_dir}" if session.log_dir else ""
    return f"{session.id}  {session.sample} (epoch {session.epoch}){where}"


def write_line(text: str) -> None:
    sys.stderr.write(text + "\r\n" if os.isatty(0) else text + "\n")
    sys.stderr.flush()

"""Ending a person's session closes the terminal server's connection without asyncio's
`InvalidStateError` traceback ("Exception in callback Future.set_result(None)") in the
eval's output, which the person's terminal shows before the results.

The race, made certain here: the terminal server sends a line just as the session closes
its connection, so the socket is readable in the same turn of the event loop as the
close. Closing the stream from another task than the one reading it (what the session
did) sets the pending read's future, and then the socket's reader callback sets it again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from labcoat.agents.human._clock import WorkingClock
from labcoat.agents.human._control import HumanControl


class Record:
    """What the control records, kept in lists (no Inspect transcript needed)."""

    def __init__(self) -> None:
        self.streams: list[tuple[str, str]] = []

    def event(self, action: str, **details: Any) -> None:
        pass

    def stream(self, kind: str, text: str) -> None:
        self.streams.append((kind, text))

    def command(self, message: dict[str, Any]) -> None:
        pass


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def close_while_readable(
    folder: Path, close: Callable[[HumanControl], Awaitable[None]]
) -> tuple[list[dict[str, Any]], Record, bytes]:
    """(what asyncio's exception handler got, the record, what the terminal server read
    after the close) when `close` runs in the turn of the loop where the terminal's
    socket has become readable."""
    reported: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: reported.append(context))
    record = Record()
    control = HumanControl(record, WorkingClock(None), "do it", None)  # type: ignore[arg-type]
    path = folder / "control.sock"
    async with await anyio.create_unix_listener(path) as listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, control.serve)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # the terminal server
        server.connect(str(path))
        server.sendall(line({"op": "hello"}) + line({"op": "ready"}))
        with anyio.fail_after(10):
            await control.ready.wait()
        await anyio.sleep(0.1)  # the session's reader now waits on the socket
        server.sendall(line({"op": "output", "data": "YnllCg=="}))  # readable now
        await asyncio.sleep(0)  # this task runs next turn, before the socket's callback
        await close(control)
        server.settimeout(10)
        rest = b""
        with contextlib.suppress(ConnectionResetError):  # closed with unread bytes
            while chunk := server.recv(65536):  # the session's end reaches the server
                rest += chunk
        server.close()
        await anyio.sleep(0.1)  # the loop runs any callback still due
        tg.cancel_scope.cancel()
    return reported, record, rest


def test_closing_the_terminal_while_it_sends_logs_no_traceback(tmp_path: Path) -> None:
    async def close(control: HumanControl) -> None:
        await control.tell_terminal("the session is over (submitted).", farewell=True)
        await control.close_terminal()

    reported, record, rest = anyio.run(close_while_readable, tmp_path, close)
    assert reported == []
    assert record.streams == [("o", "bye\n")]  # what it sent before the end is recorded
    assert json.loads(rest)["op"] == "farewell"  # and the server heard the farewell


def test_the_scenario_reproduces_the_race_of_closing_from_another_task(tmp_path: Path) -> None:
    """The old close (the stream closed by the session's task) in the same scenario: the
    traceback the person saw. Proves the test above exercises the race."""

    async def close(control: HumanControl) -> None:
        assert control._terminal is not None
        await control._terminal.aclose()

    reported, _, _ = anyio.run(close_while_readable, tmp_path, close)
    if not reported:
        pytest.skip("this anyio version does not race here; the guard above stays useful")
    [context] = reported
    assert isinstance(context.get("exception"), asyncio.InvalidStateError)
    assert "Future.set_result(None)" in context["message"]


def test_only_the_first_terminal_is_the_terminal_and_a_second_flags(tmp_path: Path) -> None:
    """A process of the person's that says `hello` on the control socket is refused (it
    replaced the terminal's connection before, and typed into the record)."""

    async def run() -> tuple[bytes, HumanControl]:
        record = Record()
        control = HumanControl(record, WorkingClock(None), "do it", None)  # type: ignore[arg-type]
        path = tmp_path / "control.sock"
        async with (
            await anyio.create_unix_listener(path) as listener,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(listener.serve, control.serve)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(str(path))
            server.sendall(line({"op": "hello"}) + line({"op": "ready"}))
            with anyio.fail_after(10):
                await control.ready.wait()
            impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            impostor.connect(str(path))
            typed = base64.b64encode(b"forged\r").decode()
            impostor.sendall(line({"op": "hello"}) + line({"op": "output", "data": typed}))
            impostor.settimeout(10)
            reply = await anyio.to_thread.run_sync(impostor.recv, 999)
            impostor.close()
            server.close()
            tg.cancel_scope.cancel()
        return reply, control

    reply, control = anyio.run(run)
    assert b"refused" in reply
    assert control.terminal_pid == os.getpid()  # the terminal's pid: its peer credentials
    assert any("second connection" in f for f in control.integrity_flags())

"""The harness's end of a person's session: a Unix socket in the sandbox's /tmp that the
`task` command and the terminal server talk to (one JSON object per line).

The terminal server keeps one connection open for the whole session (what it saw typed and
shown, attaches); closing it ends the terminal. Only the first connection that says
`hello` is the terminal's — it comes before the person has a shell — and any later one is
refused and flags the run. `task` calls connect, ask, and go.

A pause (`task stop`) freezes every process of the sample but the terminal server (its
pid from the socket's peer credentials) before the clock stops, and the clock starts
again before they are continued: no work is done off the clock. The frozen terminal takes
only `task start`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from labcoat.agents.human._clock import WorkingClock
from labcoat.agents.human._commands import MARK, CommandLog
from labcoat.agents.human._record import SessionRecord

LINE_BYTES = 8 * 1024 * 1024
STOP_GRACE_SECONDS = 2.0
"""How long a pause waits for `task stop` to print its answer before the freeze."""
ScoreCall = Callable[[], Awaitable[str]]
Freeze = Callable[[frozenset[int]], AbstractAsyncContextManager[bool]]
"""Every process of the sample stopped but the given host pids, while entered (it gives
whether every one stopped)."""


class HumanControl:
    """The session's state and the answers to the person's `task` commands."""

    def __init__(
        self,
        record: SessionRecord,
        clock: WorkingClock,
        instructions: str,
        score: ScoreCall | None,
        freeze: Freeze | None = None,
    ) -> None:
        self.record = record
        self.clock = clock
        self.instructions = instructions
        self.score = score
        self.done = anyio.Event()
        self.ready = anyio.Event()
        self.server_gone = anyio.Event()
        self.start_error: str | None = None
        self.server_scope: anyio.CancelScope | None = None
        """The terminal server's (shielded) scope: cancelled once the person was told."""
        self.answer: str | None = None
        self.ended_by: str | None = None
        self.attaches = 0
        self._terminal: SocketStream | None = None
        self._score_lock = anyio.Lock()
        self.freeze = freeze
        self.terminal_pid: int | None = None
        """The terminal server's host pid (peer credentials of its connection)."""
        self._frozen: AsyncExitStack | None = None
        self.commands = CommandLog(record.command, getattr(record, "typed_to", None))
        self.flags: list[str] = []

    # --- ending -----------------------------------------------------------------------

    def end(self, reason: str) -> None:
        if self.ended_by is None:
            self.ended_by = reason
            self.clock.stop(final=True)
            self.record.event("end", reason=reason, **self.clock.record())
        self.done.set()

    def integrity_flags(self) -> list[str]:
        """Why this session's record is suspect (the run's integrity flags)."""
        found = [*self.flags, *self.commands.flags]
        if getattr(self.record, "truncated", False):
            found.append(
                "the terminal recording lost output (over its size): not every screen of "
                "the session is in the log"
            )
        return list(dict.fromkeys(found))

    async def thaw(self) -> None:
        """Continue the sample's processes if a pause froze them (the session's end)."""
        stack, self._frozen = self._frozen, None
        if stack is not None:
            with anyio.CancelScope(shield=True):
                await stack.aclose()

    async def tell_terminal(self, text: str, *, farewell: bool = False) -> None:
        """Show `text` in the person's terminal (as the session's last words: `farewell`)."""
        if self._terminal is None:
            return
        op = "farewell" if farewell else "notice"
        message = {"op": op, "text": "\r\n[labcoat] " + text.replace("\n", "\r\n") + "\r\n"}
        with contextlib.suppress(Exception):
            await self._terminal.send(json.dumps(message).encode() + b"\n")

    async def close_terminal(self) -> None:
        """End the terminal server's connection. The socket is shut down, not closed: the
        task reading it (`_serve_terminal`) then reads its end and closes it itself.
        Closing it here, under that task's pending read, races asyncio: were the socket
        readable in the same turn of the event loop, its reader callback would set the
        read's future a second time, and asyncio would print an `InvalidStateError`
        traceback ("Exception in callback Future.set_result(None)") in the eval's output,
        which a person at the terminal sees before the results."""
        if self._terminal is None:
            return
        raw = self._terminal.extra(SocketAttribute.raw_socket, None)
        if raw is None:  # not a socket we can shut down: close it as before
            with contextlib.suppress(Exception):
                await self._terminal.aclose()
            return
        with contextlib.suppress(OSError):  # already closed by its reader
            raw.shutdown(socket.SHUT_RDWR)

    # --- the socket ---------------------------------------------------------------------

    async def serve(self, stream: SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        try:
            first = json.loads(await reader.receive_until(b"\n", LINE_BYTES))
            if first.get("op") == "hello":
                if self._terminal is not None or self.ready.is_set():
                    self._flag(
                        "a second connection to the session's control socket said it "
                        "was the terminal server"
                    )
                    await stream.send(b'{"ok": false, "text": "refused"}\n')
                    return
                self.terminal_pid = _peer_pid(stream)
                await self._serve_terminal(stream, reader)
            else:
                reply = await self.request(first)
                await stream.send(json.dumps(reply).encode() + b"\n")
                if reply.get("pausing"):
                    await self._pause(reader)
        except (
            anyio.EndOfStream,
            anyio.IncompleteRead,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,  # the session closed the terminal's connection
        ):
            pass
        except (ValueError, anyio.DelimiterNotFound) as ex:
            with contextlib.suppress(Exception):
                await stream.send(json.dumps({"ok": False, "text": f"bad request: {ex}"}).encode())
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def _serve_terminal(
        self, stream: SocketStream, reader: BufferedByteReceiveStream
    ) -> None:
        self._terminal = stream
        while True:
            message = json.loads(await reader.receive_until(b"\n", LINE_BYTES))
            await self.terminal_message(message)

    async def terminal_message(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "ready":
            self.ready.set()
        elif op == "attached":
            self.attaches += 1
            if self.clock.started_at is None:
                self.clock.start()  # the clock starts when the person first arrives
                self.record.event("start", first=True, **self.clock.record())
            self.record.event("attached", attaches=self.attaches)
        elif op == "detached":
            self.record.event("detached", **self.clock.record())
        elif op == "shell":
            self.commands.shell_started()
            self.record.event("shell shell")
        elif op == "exited":
            self.record.event("shell exited")
        elif op == "input":
            data = base64.b64decode(str(message.get("data", "")))
            self.record.stream("i", data.decode(errors="replace"))
            self.commands.typed(data, str(message.get("to", "unknown")), time.time())
            if message.get("shell_replaced_by"):
                self._flag(
                    "the session's shell was replaced (exec) by "
                    f"`{str(message['shell_replaced_by'])[:200]}`: its prompt hooks are gone"
                )
        elif op == "output":
            data = base64.b64decode(str(message.get("data", "")))
            self.record.stream("o", MARK.sub(b"", data).decode(errors="replace"))
            self.commands.shown(data)
        elif op == "resume":
            await self._resume()

    # --- pausing ------------------------------------------------------------------------

    async def _pause(self, reader: BufferedByteReceiveStream) -> None:
        """After `task stop` answered: freeze, then stop the clock."""
        with anyio.move_on_after(STOP_GRACE_SECONDS):  # `task` prints, then hangs up
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                await reader.receive(1)
        async with self._score_lock:  # not under a running score
            if self.freeze is None or self.terminal_pid is None or self._frozen is not None:
                return
            if not self.clock.running or self.ended_by is not None:
                return
            stack = AsyncExitStack()
            complete = await stack.enter_async_context(self.freeze(frozenset({self.terminal_pid})))
            if complete is False:  # a process forked past the stops: the clock runs on
                await stack.aclose()
                self.record.event("stop refused", why="a process of the session would not stop")
                await self.tell_terminal("the clock could not pause (a process would not stop)")
                return
            self._frozen = stack
            if self.clock.stop():
                self.record.event("stop", frozen=True, **self.clock.record())
        await self._send_terminal({"op": "paused", "text": "\r\n[labcoat] " + self.clock.status()})

    async def _resume(self) -> None:
        """The frozen terminal's `task start`: the clock first, then the processes."""
        if self._frozen is None or self.ended_by is not None:
            return
        if self.clock.start():
            self.record.event("start", **self.clock.record())
        await self.thaw()
        text = "\r\n[labcoat] " + self.clock.status() + "\r\n"
        await self._send_terminal({"op": "resumed", "text": text})

    async def _send_terminal(self, message: dict[str, Any]) -> None:
        if self._terminal is not None:
            with contextlib.suppress(Exception):
                await self._terminal.send(json.dumps(message).encode() + b"\n")

    def _flag(self, text: str) -> None:
        self.record.event("integrity flag", text=text)
        if text not in self.flags:
            self.flags.append(text)

    # --- `task` commands ----------------------------------------------------------------

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        op = str(message.get("op"))
        if self.ended_by is not None:
            return {"ok": False, "text": f"the session is over ({self.ended_by})"}
        if op == "instructions":
            return {"text": self.instructions}
        if op == "status":
            return {"text": self.clock.status()}
        if op == "start":
            if self.clock.start():
                self.record.event("start", **self.clock.record())
            return {"text": self.clock.status()}
        if op == "stop":
            if not self.clock.running:
                return {"text": self.clock.status() + " (resume with `task start`)"}
            if self.freeze is None:  # nothing can be frozen: the clock goes on
                return {"ok": False, "text": "the clock cannot pause in this session"}
            text = "the clock is paused now: every process of this session stops"
            return {"text": text + " until `task start`", "pausing": True}
        if op == "note":
            text = str(message.get("text", ""))
            self.record.event("note", text=text)
            return {"text": "noted"}
        if op == "score":
            return await self._score()
        if op == "submit":
            self.answer = str(message.get("answer") or "")
            self.record.tool_call("submit", {"answer": self.answer}, "submitted")
            self.record.event("submit", answer=self.answer, **self.clock.record())
            self.end("submitted")
            return {"text": "submitted: the grader scores the workspace now."}
        return {"ok": False, "text": f"unknown command {op!r}"}

    async def _score(self) -> dict[str, Any]:
        if self.score is None:
            return {"ok": False, "text": "this task has no score tool; its grader runs at submit"}
        if not self.clock.running:
            return {"ok": False, "text": "the clock is paused: `task start` first"}
        async with self._score_lock:
            if not self.clock.running or self._frozen is not None:
                return {"ok": False, "text": "the clock is paused: `task start` first"}
            result = await self.score()
        self.record.tool_call("score", {}, result)
        self.record.event("score", result=result, **self.clock.record())
        return {"text": result}


def _peer_pid(stream: SocketStream) -> int | None:
    """The connecting process's pid, in the harness's pid namespace (SO_PEERCRED)."""
    raw = stream.extra(SocketAttribute.raw_socket, None)
    if raw is None:
        return None
    try:
        creds = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    pid = struct.unpack("3i", creds)[0]
    return pid or None

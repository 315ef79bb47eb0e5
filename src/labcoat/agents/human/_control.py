"""The harness's end of a person's session: a Unix socket in the sandbox's /tmp that the
`task` command and the terminal server talk to (one JSON object per line).

The terminal server keeps one connection open for the whole session (its commands, the
recording, attaches); closing it ends the terminal. `task` calls connect, ask, and go.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from labcoat.agents.human._clock import WorkingClock
from labcoat.agents.human._record import SessionRecord

LINE_BYTES = 8 * 1024 * 1024
ScoreCall = Callable[[], Awaitable[str]]


class HumanControl:
    """The session's state and the answers to the person's `task` commands."""

    def __init__(
        self,
        record: SessionRecord,
        clock: WorkingClock,
        instructions: str,
        score: ScoreCall | None,
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

    # --- ending -----------------------------------------------------------------------

    def end(self, reason: str) -> None:
        if self.ended_by is None:
            self.ended_by = reason
            self.clock.stop(final=True)
            self.record.event("end", reason=reason, **self.clock.record())
        self.done.set()

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
                await self._serve_terminal(stream, reader)
            else:
                reply = await self.request(first)
                await stream.send(json.dumps(reply).encode() + b"\n")
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
            self.terminal_message(message)

    def terminal_message(self, message: dict[str, Any]) -> None:
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
        elif op in ("shell", "exited"):
            self.record.event(f"shell {op}")
        elif op == "command":
            self.record.command(message)
        elif op in ("output", "input"):
            data = base64.b64decode(str(message.get("data", "")))
            self.record.stream(op[0], data.decode(errors="replace"))

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
            if self.clock.stop():
                self.record.event("stop", **self.clock.record())
            return {"text": self.clock.status() + " (resume with `task start`)"}
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
            result = await self.score()
        self.record.tool_call("score", {}, result)
        self.record.event("score", result=result, **self.clock.record())
        return {"text": result}

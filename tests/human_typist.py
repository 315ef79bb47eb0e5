"""A scripted person: a program that types into a terminal (a real pseudo-terminal) and
reads what the screen shows, for `labcoat attach` and `labcoat eval --agent human`."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

LABCOAT = str(Path(sys.executable).with_name("labcoat"))
PROMPT = "[task] "


class Typist:
    def __init__(self, *args: str, cwd: str | None = None) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the command at a terminal
            if cwd:
                os.chdir(cwd)
            os.execv(LABCOAT, [LABCOAT, *args])
        self.screen = ""

    def read_until(self, text: str, timeout: float = 120.0) -> str:
        """Everything shown up to `text` (counted from where the last read stopped)."""
        start = len(self.screen)
        deadline = time.monotonic() + timeout
        while text not in self.screen[start:]:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not shown in {timeout} s; screen:\n{self.screen}")
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    raise AssertionError(f"the terminal closed before {text!r}:\n{self.screen}")
                self.screen += data.decode(errors="replace")
        return self.screen[start:]

    def type(self, line: str, *, wait_for: str | None = PROMPT, timeout: float = 120.0) -> str:
        os.write(self.fd, line.replace("\n", "\r").encode() + b"\r")
        return self.read_until(wait_for, timeout) if wait_for else ""

    def press(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def hang_up(self) -> None:
        """A dropped connection: the terminal's process is killed."""
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)

    def close(self) -> None:
        """Kill the command if it still runs, and let go of its terminal."""
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(self.pid, os.WNOHANG)[0] == 0:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def wait(self, timeout: float = 300.0) -> int:
        """The command's exit code, reading the screen until it ends."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.drain()
                return os.waitstatus_to_exitcode(status)
            self.drain(0.2)
        raise AssertionError(f"still running after {timeout} s:\n{self.screen}")

    def drain(self, timeout: float = 0.0) -> None:
        """Read what the screen shows now, for at most `timeout` seconds (a display that
        redraws all the time, as Inspect's full-screen one, has always more)."""
        end = time.monotonic() + timeout
        while select.select([self.fd], [], [], max(0.0, end - time.monotonic()))[0]:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            self.screen += data.decode(errors="replace")

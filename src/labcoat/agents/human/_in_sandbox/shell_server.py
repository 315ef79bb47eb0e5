"""The person's terminal inside the sandbox (stdlib only: it runs on the sandbox's python).

Started by the harness as an ordinary sandbox command, so the shell gets the sample's
limits, user, network policy and GPUs. It keeps one bash in a pseudo-terminal alive for
the whole session and serves it on a Unix socket: `labcoat attach` on the host connects,
and a dropped connection only detaches (the shell and its jobs go on; the next attach
replays the screen's recent output).

It is a relay, and reports to the harness only what it sees itself, over its one control
connection: every byte typed (with where it went: the shell itself, or the program in the
terminal's foreground, as the kernel's terminal says) and every byte the terminal showed.
The harness makes the log's records from these; nothing the shell prints is a record
(docs/humans.md: markers the prompt hooks print are only the shell's own annotations).

While the person's clock is paused the harness has stopped every other process of the
sample; this server alone runs on, keeps the typed bytes from the frozen shell and waits
for `task start`. It makes itself undumpable, so the person's processes (its own user)
cannot read or change its memory.

Client → server frames: one type byte, a 4-byte big-endian length, the payload
(`d` keystrokes, `w` a JSON window size). Server → client: the terminal's bytes.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import struct
import sys
import termios

MARK = re.compile(rb"\x1b\]777;labcoat;[^\x07]*\x07")
PARTIAL = b"\x1b]777;"
REPLAY_BYTES = 64 * 1024
RESUME = "task start"
PAUSED_PROMPT = b"[paused] "
PAUSED_BANNER = (
    b"\r\n[labcoat] the clock is paused and every process of this session is stopped;"
    b" type `task start` to resume.\r\n" + PAUSED_PROMPT
)


def _undumpable() -> None:
    """No process of the person's (same user, no capability) may ptrace this one or read
    its /proc memory (prctl PR_SET_DUMPABLE 0)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


class Control:
    """The line-JSON connection to the harness; its end is the session's end."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buffer = b""
        self.closed = False

    def send(self, message: dict) -> None:
        try:
            self.sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            self.closed = True  # the harness ended the session (the loop then stops)

    def read_lines(self) -> list[dict] | None:
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            return None
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]


class Shell:
    """bash in a pseudo-terminal; restarted on the next attach after the person exits it."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.server_argv = _cmdline("self")
        self.pid: int | None = None
        self.fd: int | None = None
        self.size = (24, 80)

    def start(self) -> None:
        pid, fd = pty.fork()
        if pid == 0:
            os.execvp(self.argv[0], self.argv)
        self.pid, self.fd = pid, fd
        self.resize(*self.size)

    def resize(self, rows: int, cols: int) -> None:
        self.size = (rows, cols)
        if self.fd is not None:
            fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def foreground(self) -> str:
        """Who reads what is typed now: "shell" (the shell itself, at its prompt or in a
        builtin), else the foreground program's name, as the terminal (the kernel) says."""
        if self.fd is None:
            return "none"
        try:
            group = os.tcgetpgrp(self.fd)
        except OSError:
            return "unknown"
        if group == self.pid:
            return "shell"
        try:
            with open(f"/proc/{group}/comm") as comm:
                return comm.read().strip() or "unknown"
        except OSError:
            return "unknown"

    def replaced(self) -> str | None:
        """The command line the shell `exec`ed into, when it is no longer the one started
        (its prompt hooks went with it)."""
        words = _cmdline(str(self.pid)) if self.pid is not None else None
        if words is None or words == self.argv or words == self.server_argv:  # or not yet exec'd
            return None
        return " ".join(words)

    def reap(self) -> bool:
        """True when the shell has exited (and is gone)."""
        if self.pid is None:
            return True
        done, _ = os.waitpid(self.pid, os.WNOHANG)
        if done:
            if self.fd is not None:
                os.close(self.fd)
            self.pid = self.fd = None
        return self.pid is None


class Screen:
    """What is shown: the terminal's bytes less the prompt hooks' markers (which may be
    split across reads)."""

    def __init__(self) -> None:
        self.pending = b""

    def shown(self, data: bytes) -> bytes:
        data = self.pending + data
        self.pending = b""
        cut = data.rfind(PARTIAL)
        if cut != -1 and b"\x07" not in data[cut:] and len(data) - cut < 4096:
            data, self.pending = data[:cut], data[cut:]
        return MARK.sub(b"", data)


class Paused:
    """The paused terminal: a line typed here is kept from the (stopped) shell; `task
    start` asks the harness to resume."""

    def __init__(self) -> None:
        self.active = False
        self.line = b""

    def type(self, data: bytes, client: socket.socket | None, control: Control) -> None:
        for byte in data:
            char = bytes([byte])
            if char in (b"\r", b"\n"):
                _send(client, b"\r\n")
                if self.line.decode(errors="replace").strip() in (RESUME, "start"):
                    control.send({"op": "resume"})
                else:
                    _send(client, PAUSED_BANNER)
                self.line = b""
            elif char in (b"\x7f", b"\x08"):
                if self.line:
                    self.line = self.line[:-1]
                    _send(client, b"\x08 \x08")
            elif char == b"\x03" or char == b"\x15":
                self.line = b""
                _send(client, b"^C\r\n" + PAUSED_PROMPT)
            elif byte >= 0x20 and len(self.line) < 256:
                self.line += char
                _send(client, char)


def _cmdline(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return [a.decode(errors="replace") for a in file.read().rstrip(b"\0").split(b"\0")]
    except OSError:
        return None


def _frames(buffer: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    frames = []
    while len(buffer) >= 5:
        kind, size = buffer[:1], struct.unpack(">I", buffer[1:5])[0]
        if len(buffer) < 5 + size:
            break
        frames.append((kind, buffer[5 : 5 + size]))
        buffer = buffer[5 + size :]
    return frames, buffer


def _last_line(replay: bytes) -> bytes:
    """The screen's last, unfinished line (the prompt the shell printed)."""
    return replay[replay.rfind(b"\n") + 1 :]


def serve(socket_path: str, control_path: str, shell_argv: list[str]) -> None:
    _undumpable()
    control = Control(control_path)
    control.send({"op": "hello", "pid": os.getpid()})
    shell = Shell(shell_argv)
    screen = Screen()
    paused = Paused()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    listener.bind(socket_path)
    os.chmod(socket_path, 0o600)
    listener.listen(4)
    control.send({"op": "ready"})
    client: socket.socket | None = None
    inbox = b""
    replay = b""
    farewell = b"\r\n[labcoat] the session is over.\r\n"
    while not control.closed:
        readers: list[socket.socket | int] = [listener, control.sock, *([client] if client else [])]
        if shell.fd is not None and not paused.active:
            readers.append(shell.fd)
        ready, _, _ = select.select(readers, [], [], 1.0)
        if control.sock in ready:
            messages = control.read_lines()
            if messages is None:
                break  # the harness ended the session
            for message in messages:
                op = message.get("op")
                text = str(message.get("text", "")).encode()
                if op == "notice":
                    _send(client, text)
                elif op == "farewell":
                    farewell = text
                elif op == "paused":
                    paused.active, paused.line = True, b""
                    _send(client, text + PAUSED_BANNER)
                elif op == "resumed":
                    paused.active = False
                    _send(client, text + _last_line(replay))
        if listener in ready:
            new, _ = listener.accept()
            if client is not None:
                _send(client, b"\r\n[labcoat] another terminal attached; this one is detached.\r\n")
                client.close()
            client, inbox = new, b""
            if shell.reap() and not paused.active:
                shell.start()
                replay = b""
                control.send({"op": "shell", "pid": shell.pid})
            _send(client, replay)
            if paused.active:
                _send(client, PAUSED_BANNER)
            control.send({"op": "attached"})
        if client is not None and client in ready:
            data = client.recv(65536)
            if not data:
                client.close()
                client = None
                control.send({"op": "detached"})
            else:
                frames, inbox = _frames(inbox + data)
                for kind, payload in frames:
                    if kind == b"w":
                        size = json.loads(payload)
                        shell.resize(int(size["rows"]), int(size["cols"]))
                    elif kind == b"d" and paused.active:
                        control.send({"op": "input", "data": _b64(payload), "to": "paused"})
                        paused.type(payload, client, control)
                    elif kind == b"d" and shell.fd is not None:
                        to = shell.foreground()
                        message = {"op": "input", "data": _b64(payload), "to": to}
                        if to == "shell" and (replaced := shell.replaced()):
                            message["shell_replaced_by"] = replaced
                        control.send(message)
                        os.write(shell.fd, payload)
        if shell.fd is not None and shell.fd in ready:
            try:
                data = os.read(shell.fd, 65536)
            except OSError:
                data = b""
            if data:
                control.send({"op": "output", "data": _b64(data)})
                shown = screen.shown(data)
                replay = (replay + shown)[-REPLAY_BYTES:]
                _send(client, shown)
            elif shell.reap():
                control.send({"op": "exited"})
                if client is not None:
                    _send(client, b"\r\n[labcoat] the shell ended; attach again for a new one.\r\n")
                    client.close()
                    client = None
    if client is not None:
        _send(client, farewell)
        client.close()
    if shell.pid is not None:
        os.kill(shell.pid, signal.SIGHUP)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _send(client: socket.socket | None, data: bytes) -> None:
    if client is not None:
        with contextlib.suppress(OSError):
            client.sendall(data)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.argv[3:])

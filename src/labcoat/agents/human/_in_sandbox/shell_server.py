"""The person's terminal inside the sandbox (stdlib only: it runs on the sandbox's python).

Started by the harness as an ordinary sandbox command, so the shell gets the sample's
limits, user, network policy and GPUs. It keeps one bash in a pseudo-terminal alive for
the whole session and serves it on a Unix socket: `labcoat attach` on the host connects,
and a dropped connection only detaches (the shell and its jobs go on; the next attach
replays the screen's recent output).

Everything the shell prints goes to the harness over the control socket: the raw stream
(the session recording) and, from markers the shell's prompt hooks print, one record per
command with its exit status, directory, times and output.

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
import time

MARK = re.compile(rb"\x1b\]777;labcoat;([a-z]+);?([^\x07]*)\x07")
PARTIAL = b"\x1b]777;"
REPLAY_BYTES = 64 * 1024
OUTPUT_BYTES = 16 * 1024  # kept per command in its record (the recording has it all)
ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]|\r")


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


class Commands:
    """Turns the prompt hooks' markers into one record per command."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self.started: float | None = None
        self.output = b""
        self.pending = b""

    def feed(self, data: bytes) -> bytes:
        """The bytes to show (markers removed); records go to the harness."""
        data = self.pending + data
        self.pending = b""
        cut = data.rfind(PARTIAL)
        if cut != -1 and b"\x07" not in data[cut:]:
            data, self.pending = data[:cut], data[cut:]
        shown = b""
        pos = 0
        for match in MARK.finditer(data):
            self._collect(data[pos : match.start()])
            shown += data[pos : match.start()]
            self._marker(match.group(1).decode(), match.group(2).decode(errors="replace"))
            pos = match.end()
        self._collect(data[pos:])
        return shown + data[pos:]

    def _collect(self, data: bytes) -> None:
        if self.started is not None and len(self.output) < OUTPUT_BYTES:
            self.output += data

    def _marker(self, kind: str, payload: str) -> None:
        if kind == "start":
            self.started, self.output = time.time(), b""
        elif kind == "end" and self.started is not None:
            status, cwd, command = ([*payload.split(";", 2), "", ""])[:3]
            text = ANSI.sub(b"", self.output).decode(errors="replace")
            self.control.send(
                {
                    "op": "command",
                    "command": _b64(command),
                    "exit": int(status) if status.lstrip("-").isdigit() else None,
                    "cwd": _b64(cwd),
                    "started": self.started,
                    "ended": time.time(),
                    "output": text[:OUTPUT_BYTES],
                    "truncated": len(self.output) >= OUTPUT_BYTES,
                }
            )
            self.started = None


def _b64(text: str) -> str:
    try:
        return base64.b64decode(text).decode(errors="replace").rstrip("\n")
    except ValueError:
        return text


def _frames(buffer: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    frames = []
    while len(buffer) >= 5:
        kind, size = buffer[:1], struct.unpack(">I", buffer[1:5])[0]
        if len(buffer) < 5 + size:
            break
        frames.append((kind, buffer[5 : 5 + size]))
        buffer = buffer[5 + size :]
    return frames, buffer


def serve(socket_path: str, control_path: str, shell_argv: list[str]) -> None:
    control = Control(control_path)
    control.send({"op": "hello", "pid": os.getpid()})
    commands = Commands(control)
    shell = Shell(shell_argv)
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
        readers = [listener, control.sock] + ([client] if client else [])
        if shell.fd is not None:
            readers.append(shell.fd)
        ready, _, _ = select.select(readers, [], [], 1.0)
        if control.sock in ready:
            messages = control.read_lines()
            if messages is None:
                break  # the harness ended the session
            for message in messages:
                text = str(message.get("text", "")).encode()
                if message.get("op") == "notice" and client is not None:
                    _send(client, text)
                elif message.get("op") == "farewell":
                    farewell = text
        if listener in ready:
            new, _ = listener.accept()
            if client is not None:
                _send(client, b"\r\n[labcoat] another terminal attached; this one is detached.\r\n")
                client.close()
            client, inbox = new, b""
            if shell.reap():
                shell.start()
                replay = b""
                control.send({"op": "shell", "pid": shell.pid})
            _send(client, replay)
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
                    elif kind == b"d" and shell.fd is not None:
                        os.write(shell.fd, payload)
                        control.send({"op": "input", "data": base64.b64encode(payload).decode()})
        if shell.fd is not None and shell.fd in ready:
            try:
                data = os.read(shell.fd, 65536)
            except OSError:
                data = b""
            if data:
                shown = commands.feed(data)
                replay = (replay + shown)[-REPLAY_BYTES:]
                control.send({"op": "output", "data": base64.b64encode(shown).decode()})
                if client is not None:
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


def _send(client: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        client.sendall(data)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.argv[3:])

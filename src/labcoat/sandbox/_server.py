"""The exec server that runs inside each sample's bubblewrap sandbox.

One server per sample is started with the sandbox's own Python (`python -I -S`), so it
shares the sample's pid, mount and network namespaces with every command it runs:
background processes and localhost servers persist between calls, as in a container,
and all of them die when the sandbox stops. Spawning a new bwrap per command would
cost several milliseconds each; a request over a socketpair costs far less.

Protocol: length-prefixed JSON frames over inherited sockets (fd numbers in argv). Bytes
travel base64-encoded. Every request has an `id`; replies carry the same id. Requests run
on a thread pool so a long command never blocks a `kill` or a file read. As root there
are two servers, root's and a forked one for the agent, so no command pays for a uid
switch (which rules out vfork).

This file must import nothing outside the standard library: it runs in the sandbox.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

FRAME_HEADER = struct.Struct(">I")
MAX_CONCURRENT_REQUESTS = 256
INLINE_OPS = {"kill", "ping", "job_status", "job_kill"}


class Channel:
    """Framed JSON over a stream socket, safe for concurrent senders."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._send_lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        with self._send_lock:
            self._sock.sendall(FRAME_HEADER.pack(len(payload)) + payload)

    def receive(self) -> dict[str, Any] | None:
        header = self._read_exactly(FRAME_HEADER.size)
        if header is None:
            return None
        (length,) = FRAME_HEADER.unpack(header)
        payload = self._read_exactly(length)
        return None if payload is None else json.loads(payload)

    def _read_exactly(self, size: int) -> bytes | None:
        chunks: list[bytes] = []
        while size:
            chunk = self._sock.recv(min(size, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


# --- process trees -------------------------------------------------------------------


def _process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, session id), read from /proc of this pid namespace."""
    table: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # the command name may hold spaces and parentheses: split after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        table[int(name)] = (int(fields[1]), int(fields[3]))
    return table


def kill_tree(root: int) -> None:
    """SIGKILL `root`, its descendants and everything left in its session."""
    for _ in range(20):  # repeat: a fork bomb may spawn between the scan and the kill
        table = _process_table()
        doomed = {pid for pid, (_, sid) in table.items() if sid == root}
        if root in table:
            doomed.add(root)
        frontier = list(doomed)
        while frontier:
            parent = frontier.pop()
            for pid, (ppid, _) in table.items():
                if ppid == parent and pid not in doomed:
                    doomed.add(pid)
                    frontier.append(pid)
        doomed.discard(os.getpid())
        if not doomed:
            return
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


# --- capped output -------------------------------------------------------------------


class HeadTailBuffer:
    """Keeps the first and last halves of `limit` bytes of a stream, and its real size.

    Past the limit the middle is dropped and replaced, in `value()`, by one line saying
    how many bytes were cut and how long the stream really was (which tools parse, so
    a model is told the truth about output it did not see).
    """

    MARKER_ROOM = 256  # so head + marker + tail stays within the limit

    def __init__(self, limit: int) -> None:
        kept = max(0, limit - self.MARKER_ROOM)
        self.head_limit = kept // 2
        self.tail_limit = kept - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.size = 0

    @property
    def truncated(self) -> bool:
        return self.size > self.head_limit + self.tail_limit

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]

    def value(self) -> bytes:
        if not self.truncated:
            return bytes(self.head + self.tail)
        cut = self.size - len(self.head) - len(self.tail)
        return bytes(self.head) + truncation_marker(cut, self.size) + bytes(self.tail)


def truncation_marker(cut: int, size: int) -> bytes:
    """The line put where the middle of a long stream was cut.

    labcoat's tools parse it (agents/research/_tools/_output.py): keep the two in step.
    """
    line = f"[... sandbox cut {cut:,} bytes from the middle; the stream was {size:,} bytes ...]"
    return f"\n{line}\n".encode()


def _pump(
    proc: subprocess.Popen[bytes],
    stdin_data: bytes | None,
    out: HeadTailBuffer,
    err: HeadTailBuffer,
    timeout: float | None,
) -> bool:
    """Feed stdin and collect output until the process exits; False on timeout.

    One thread and one selector per command. The process's exit is watched through a
    pidfd, so a background child that keeps the pipes open doesn't hold the reply.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    pidfd = os.pidfd_open(proc.pid)
    # op_exec starts every command with stdout and stderr on pipes
    assert proc.stdout is not None and proc.stderr is not None
    pending = memoryview(stdin_data or b"")
    with selectors.DefaultSelector() as selector:
        # each stream's key carries the buffer its output goes to
        for pipe, sink in ((proc.stdout, out), (proc.stderr, err)):
            selector.register(pipe, selectors.EVENT_READ, sink)
        if proc.stdin is not None:
            selector.register(proc.stdin, selectors.EVENT_WRITE)
        selector.register(pidfd, selectors.EVENT_READ)
        exited = False
        try:
            while len(selector.get_map()) > (0 if exited else 1) or not exited:
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return False
                events = selector.select(0 if exited else wait)
                if not events and exited:
                    break  # exited and nothing more to read right now
                for key, _ in events:
                    if key.fileobj == pidfd:
                        exited = True
                        selector.unregister(pidfd)
                    elif key.fileobj is proc.stdin:
                        try:
                            written = os.write(proc.stdin.fileno(), pending[: 1 << 16])
                        except BrokenPipeError:
                            written = len(pending)
                        pending = pending[written:]
                        if not pending:
                            selector.unregister(proc.stdin)
                            proc.stdin.close()
                    else:
                        chunk = os.read(key.fd, 1 << 16)
                        if chunk:
                            key.data.feed(chunk)
                        else:
                            selector.unregister(key.fileobj)
            return True
        finally:
            os.close(pidfd)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()


# --- the server ----------------------------------------------------------------------


class Server:
    """Serves one identity (root or agent): commands run as the server's own user."""

    def __init__(self, channel: Channel, config: dict[str, Any]) -> None:
        self.channel = channel
        identity = config["identity"]
        self.env: dict[str, str] = {
            **config["env"],
            "HOME": identity["home"],
            "USER": identity["name"],
            "LOGNAME": identity["name"],
        }
        self.owner: tuple[int, int] = tuple(config["owner"])
        self.output_limit: int = config["output_limit"]
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.cancelled: set[str] = set()
        self.jobs: dict[int, subprocess.Popen[bytes]] = {}
        self.lock = threading.Lock()

    def serve(self) -> None:
        # quick control requests run inline so they are never queued behind commands
        with ThreadPoolExecutor(max_workers=MAX_CONCURRENT_REQUESTS) as pool:
            while (request := self.channel.receive()) is not None:
                if request.get("op") in INLINE_OPS:
                    self.handle(request)
                else:
                    pool.submit(self.handle, request)

    def handle(self, request: dict[str, Any]) -> None:
        op = request.get("op")
        try:
            reply = getattr(self, f"op_{op}")(request)
        except Exception as ex:  # report, never die: the sandbox must stay usable
            reply = {"error": type(ex).__name__, "message": str(ex)}
        reply["id"] = request["id"]
        self.channel.send(reply)

    def _popen(self, request: dict[str, Any], **streams: Any) -> subprocess.Popen[bytes]:
        # no uid switch here: that would rule out vfork and double the cost of a command
        return subprocess.Popen(
            request["cmd"],
            cwd=request["cwd"],
            env={**self.env, **(request.get("env") or {})},
            start_new_session=True,  # own session: the unit we kill on timeout/cancel
            **streams,
        )

    def _spawn_error(self, request: dict[str, Any], ex: OSError) -> dict[str, Any] | None:
        """Map launch failures to shell-like results instead of protocol errors."""
        if not os.path.isdir(request["cwd"]):
            message = f"labcoat: working directory {request['cwd']!r} does not exist\n"
            return {"returncode": 1, "stdout": "", "stderr": _b64(message.encode())}
        if isinstance(ex, FileNotFoundError):
            message = f"{request['cmd'][0]}: command not found\n"
            return {"returncode": 127, "stdout": "", "stderr": _b64(message.encode())}
        if isinstance(ex, PermissionError):
            message = f"{request['cmd'][0]}: permission denied\n"
            return {"returncode": 126, "stdout": "", "stderr": _b64(message.encode())}
        return None

    def op_ping(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"pong": True}

    def op_exec(self, request: dict[str, Any]) -> dict[str, Any]:
        stdin_data = _unb64(request.get("input"))
        try:
            proc = self._popen(
                request,
                stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as ex:
            mapped = self._spawn_error(request, ex)
            if mapped is None:
                raise
            return mapped
        rid = request["id"]
        with self.lock:
            self.running[rid] = proc
        out, err = HeadTailBuffer(self.output_limit), HeadTailBuffer(self.output_limit)
        timed_out = not _pump(proc, stdin_data, out, err, request.get("timeout"))
        if timed_out:
            kill_tree(proc.pid)
        proc.wait()
        with self.lock:
            self.running.pop(rid, None)
            cancelled = rid in self.cancelled
            self.cancelled.discard(rid)
        return {
            "returncode": proc.returncode,
            "stdout": _b64(out.value()),
            "stderr": _b64(err.value()),
            "truncated": out.truncated or err.truncated,
            "timed_out": timed_out,
            "cancelled": cancelled,
        }

    def op_kill(self, request: dict[str, Any]) -> dict[str, Any]:
        """Kill the process tree of a running exec (the host's call was cancelled)."""
        with self.lock:
            proc = self.running.get(request["target"])
            if proc is not None:
                self.cancelled.add(request["target"])
        if proc is not None:
            kill_tree(proc.pid)
        return {"killed": proc is not None}

    def op_spawn(self, request: dict[str, Any]) -> dict[str, Any]:
        """Start a background process writing to a log; it lives until killed or stop."""
        log_path = request["log"]
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        with open(log_path, "ab") as log:
            proc = self._popen(
                request, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        with self.lock:
            self.jobs[proc.pid] = proc
        return {"pid": proc.pid}

    def _job(self, pid: int) -> subprocess.Popen[bytes]:
        with self.lock:
            proc = self.jobs.get(pid)
        if proc is None:
            raise LookupError(f"no background process {pid}")
        return proc

    def op_job_status(self, request: dict[str, Any]) -> dict[str, Any]:
        proc = self._job(request["pid"])
        return {"running": proc.poll() is None, "returncode": proc.returncode}

    def op_job_kill(self, request: dict[str, Any]) -> dict[str, Any]:
        proc = self._job(request["pid"])
        kill_tree(proc.pid)
        proc.wait()
        return {"returncode": proc.returncode}

    def op_read(self, request: dict[str, Any]) -> dict[str, Any]:
        path = request["path"]
        size = os.stat(path).st_size
        if size > request["max_size"]:
            return {"error": "OutputLimitExceededError", "message": f"{path} is {size} bytes"}
        with open(path, "rb") as f:
            return {"data": _b64(f.read())}

    def op_write(self, request: dict[str, Any]) -> dict[str, Any]:
        """Write a file; paths it creates belong to the sandbox's default user."""
        path = request["path"]
        created: list[str] = []
        parent = os.path.dirname(path)
        while parent and not os.path.exists(parent):
            created.append(parent)
            parent = os.path.dirname(parent)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(_unb64(request["data"]) or b"")
        if self.owner != (os.getuid(), os.getgid()):
            for new_path in [*created, path]:
                os.chown(new_path, *self.owner)
        return {"written": True}


# --- the proxy forwarder ---------------------------------------------------------------


def splice(source: socket.socket, sink: socket.socket) -> None:
    """Copy one direction of a connection until it ends (the host's proxy uses it too)."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _forward(client: socket.socket, target: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        client.close()
        return
    threading.Thread(target=splice, args=(upstream, client), daemon=True).start()
    splice(client, upstream)


def start_proxy_forwarder(port: int, target: str) -> None:
    """127.0.0.1:port inside the sandbox leads to the harness's proxy socket."""
    listener = socket.create_server(("127.0.0.1", port))
    listener.set_inheritable(False)

    def accept_loop() -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=_forward, args=(client, target), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()


def _handshake(fd: int) -> tuple[Channel, dict[str, Any]]:
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)  # commands must never reach the control channel
    channel = Channel(sock)
    channel.send({"ready": True, "pid": os.getpid()})
    config = channel.receive()
    if config is None:
        sys.exit(1)
    return channel, config


def main() -> None:
    """argv: FD [AGENT_FD]. With AGENT_FD (root mode) a forked agent server serves it."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    fds = [int(arg) for arg in sys.argv[1:]]
    if len(fds) == 2 and os.fork() == 0:
        # the agent's server: same namespaces, no capabilities, uid 1000
        os.close(fds[0])
        channel, config = _handshake(fds[1])
        identity = config["identity"]
        os.setgroups([])
        os.setgid(identity["gid"])
        os.setuid(identity["uid"])
    else:
        for extra in fds[1:]:
            os.close(extra)
        channel, config = _handshake(fds[0])
    for name, value in config.get("rlimits", {}).items():
        resource.setrlimit(getattr(resource, name), (value, value))
    if config.get("forward_proxy"):
        start_proxy_forwarder(config["forward_proxy"]["port"], config["forward_proxy"]["socket"])
    Server(channel, config).serve()


if __name__ == "__main__":
    main()

"""`task`: the person's commands to the harness from inside the sandbox (stdlib only).

task instructions        the task's instructions again
task status              working time, budget, clock state, scores so far
task stop / task start   pause / resume the working clock
task score               the task's own score tool, where the family has one
task note TEXT           a note kept in the log
task submit [ANSWER]     end the session: the protected grader scores the workspace
"""

from __future__ import annotations

import json
import os
import socket
import sys

CONTROL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "control.sock")
OPS = ("instructions", "status", "start", "stop", "score", "note", "submit")


def call(op: str, **args: object) -> dict:
    """Ask the harness; the answer is printed before the connection closes (`task stop`
    freezes the session once it has)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(CONTROL)
        sock.sendall(json.dumps({"op": op, **args}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        reply = json.loads(data or b"{}")
        print(reply.get("text", ""), flush=True)
    return reply


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in OPS:
        print(__doc__.strip())
        return 0 if not argv or argv[0] in ("-h", "--help", "help") else 2
    op, rest = argv[0], argv[1:]
    args: dict[str, object] = {}
    if op == "note":
        args["text"] = " ".join(rest)
    if op == "submit":
        args["answer"] = " ".join(rest)
        if sys.stdin.isatty():
            sure = input("Submit and end the session? The workspace is graded as it is. [y/N] ")
            if sure.strip().lower() not in ("y", "yes"):
                print("not submitted")
                return 1
    try:
        reply = call(op, **args)
    except OSError as ex:
        print(f"task: the harness is unreachable ({ex}); is the session over?", file=sys.stderr)
        return 1
    return 0 if reply.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

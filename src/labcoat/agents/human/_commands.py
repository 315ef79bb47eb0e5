"""A person's commands, made by the harness from what the terminal server saw: the bytes
typed (and, from the kernel's terminal, whether the shell itself or another program read
them) and the bytes shown.

A command is a line typed to the shell, as the keys typed it (the line editor's keys
replayed: backspace, Ctrl-U, Ctrl-W, arrows along the line); its output is what the
terminal showed from its Enter until the person typed again, less the prompt line it
ended on. Keys whose effect only the shell knows (history, completion) stay in the line as
`⟨up⟩`, `⟨tab⟩`. Lines typed to another program (an editor, a REPL, a `[y/N]`) are kept
as input to that program, not as commands.

The shell's prompt hooks still print markers (`bashrc`): they only annotate a command
with the exit status, directory and history line the shell reports, and they are counted.
More end-of-command markers than the person gave the shell occasions to print (line ends,
Ctrl-C, Ctrl-D, Ctrl-Z, a new shell) means a command printed them; typed lines the shell
never reported on means its hooks were changed. Either flags the run; neither changes
what is recorded.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OUTPUT_BYTES = 16 * 1024
"""Output kept per command in its record (the recording keeps the terminal's)."""
LINE_CHARS = 16 * 1024
UNREPORTED_LINES = 5
"""Lines typed to the shell after its last report, at the end, that say its hooks are off
(an honest session ends with one: `task submit`)."""

MARK = re.compile(rb"\x1b\]777;labcoat;([a-z]+);?([^\x07]*)\x07")
PARTIAL = b"\x1b]777;"
ANSI = re.compile(
    rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>]|\r"
)
CSI = re.compile(rb"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|O[A-Za-z])")
OCCASIONS = frozenset(b"\r\n\x03\x04\x1a\x1c")
"""Typed bytes after which bash prints a prompt (and runs PROMPT_COMMAND)."""
KEYS = {
    b"\x1b[A": "⟨up⟩",
    b"\x1bOA": "⟨up⟩",
    b"\x1b[B": "⟨down⟩",
    b"\x1bOB": "⟨down⟩",
    b"\t": "⟨tab⟩",
    b"\x12": "⟨^R⟩",
    b"\x10": "⟨up⟩",
    b"\x0e": "⟨down⟩",
}


@dataclass
class LineEditor:
    """The line being typed to the shell, as readline's default keys edit it."""

    chars: list[str] = field(default_factory=list)
    cursor: int = 0
    pending: bytes = b""

    def text(self) -> str:
        return "".join(self.chars)

    def clear(self) -> None:
        self.chars, self.cursor = [], 0

    def _insert(self, text: str) -> None:
        if len(self.chars) < LINE_CHARS:
            self.chars[self.cursor : self.cursor] = list(text)
            self.cursor += len(text)

    def key(self, key: bytes) -> None:
        """One key (a byte, or an escape sequence) that is not a line end."""
        if key in KEYS:
            self._insert(KEYS[key])
        elif key in (b"\x7f", b"\x08"):
            if self.cursor:
                del self.chars[self.cursor - 1]
                self.cursor -= 1
        elif key in (b"\x1b[D", b"\x1bOD", b"\x02"):
            self.cursor = max(0, self.cursor - 1)
        elif key in (b"\x1b[C", b"\x1bOC", b"\x06"):
            self.cursor = min(len(self.chars), self.cursor + 1)
        elif key in (b"\x1b[H", b"\x1bOH", b"\x01", b"\x1b[1~"):
            self.cursor = 0
        elif key in (b"\x1b[F", b"\x1bOF", b"\x05", b"\x1b[4~"):
            self.cursor = len(self.chars)
        elif key in (b"\x1b[3~", b"\x04"):
            if self.cursor < len(self.chars):
                del self.chars[self.cursor]
        elif key == b"\x15":
            del self.chars[: self.cursor]
            self.cursor = 0
        elif key == b"\x0b":
            del self.chars[self.cursor :]
        elif key == b"\x17":
            start = self.cursor
            while start and self.chars[start - 1] == " ":
                start -= 1
            while start and self.chars[start - 1] != " ":
                start -= 1
            del self.chars[start : self.cursor]
            self.cursor = start
        elif key in (b"\x1b[200~", b"\x1b[201~", b"\x0c"):
            pass  # bracketed paste's brackets; Ctrl-L redraws
        elif key.startswith(b"\x1b") or (len(key) == 1 and key[0] < 0x20):
            self._insert(f"⟨{key.decode(errors='replace').encode('unicode_escape').decode()}⟩")
        else:
            self._insert(key.decode(errors="replace"))

    def keys(self, data: bytes) -> list[bytes]:
        """`data` cut into keys (an escape sequence split across reads waits)."""
        data = self.pending + data
        self.pending = b""
        out: list[bytes] = []
        pos = 0
        while pos < len(data):
            byte = data[pos]
            if byte == 0x1B:
                match = CSI.match(data, pos)
                if match:
                    out.append(match.group())
                    pos = match.end()
                    continue
                if len(data) - pos < 8 and not re.search(rb"[@-~]", data[pos + 2 :]):
                    self.pending = data[pos:]
                    break
                out.append(data[pos : pos + 1])
                pos += 1
            elif byte >= 0x80:  # a UTF-8 character: its whole sequence
                end = pos + 1
                while end < len(data) and 0x80 <= data[end] < 0xC0:
                    end += 1
                out.append(data[pos:end])
                pos = end
            else:
                out.append(data[pos : pos + 1])
                pos += 1
        return out


@dataclass
class _Command:
    command: str
    typed: float
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reported: dict[str, Any] | None = None


def _text(output: bytes) -> str:
    """What a command printed: the lines between the one it was typed on (the rest of
    its echo) and the prompt line the terminal ended on."""
    lines = ANSI.sub(b"", MARK.sub(b"", output)).decode(errors="replace").split("\n")
    return "\n".join(lines[1:-1])


def _b64(text: str) -> str:
    try:
        return base64.b64decode(text).decode(errors="replace").rstrip("\n")
    except ValueError:
        return text


class CommandLog:
    """Commands from the terminal server's streams; `emit` gets each one's record."""

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], None],
        typed_to: Callable[[str, str], None] | None = None,
    ) -> None:
        self.emit = emit
        self.typed_to = typed_to or (lambda to, text: None)
        self.editor = LineEditor()
        self.program_lines: dict[str, bytearray] = {}
        self.current: _Command | None = None
        self.pending_output = b""
        self.occasions = 0
        self.ends = 0
        self.shell_lines_since_report = 0
        self.flags: list[str] = []
        self._forged_flagged = False

    # --- what the server saw --------------------------------------------------------

    def shell_started(self) -> None:
        self._emit_current()
        self.editor = LineEditor()
        self.occasions += 1  # a new shell prints its first prompt

    def typed(self, data: bytes, to: str, when: float) -> None:
        self._emit_current()
        if to != "shell":
            self._program(data, to)
            if to != "paused":
                self.occasions += sum(b in OCCASIONS for b in data)
            return
        for key in self.editor.keys(data):
            if len(key) == 1 and key[0] in OCCASIONS:
                self.occasions += 1
                if key in (b"\r", b"\n"):
                    self._line_end(when)
                elif key == b"\x03":
                    self.editor.clear()
                elif key == b"\x04" and not self.editor.chars:
                    self._line_end(when, eof=True)
                continue
            self.editor.key(key)

    def shown(self, data: bytes) -> None:
        data = self.pending_output + data
        self.pending_output = b""
        cut = data.rfind(PARTIAL)
        if cut != -1 and b"\x07" not in data[cut:] and len(data) - cut < 65536:
            data, self.pending_output = data[:cut], data[cut:]
        if self.current is not None:
            room = OUTPUT_BYTES - len(self.current.output)
            self.current.output += data[: max(room, 0)]
            self.current.truncated |= len(data) > room
        for match in MARK.finditer(data):
            self._marker(match.group(1).decode(), match.group(2).decode(errors="replace"))

    def finish(self) -> None:
        self._emit_current()
        if self.shell_lines_since_report >= UNREPORTED_LINES:
            self._flag(
                f"{self.shell_lines_since_report} lines typed to the shell after its last "
                "report: its prompt hooks (PS0/PROMPT_COMMAND) were changed or replaced"
            )

    # --- records ----------------------------------------------------------------------

    def _line_end(self, when: float, *, eof: bool = False) -> None:
        line = "exit ⟨^D⟩" if eof else self.editor.text()
        self.editor.clear()
        if line.strip():
            self._emit_current()  # lines typed at once (a paste): one command each
            self.current = _Command(line, when)
            self.shell_lines_since_report += 1

    def _program(self, data: bytes, to: str) -> None:
        buffer = self.program_lines.setdefault(to, bytearray())
        for byte in data:
            if byte in (0x0D, 0x0A):
                text = ANSI.sub(b"", bytes(buffer)).decode(errors="replace")
                self.typed_to(to, text)
                buffer.clear()
            elif len(buffer) < LINE_CHARS:
                buffer.append(byte)

    def _marker(self, kind: str, payload: str) -> None:
        if kind != "end":
            return
        self.ends += 1
        self.shell_lines_since_report = 0
        if self.ends > self.occasions and not self._forged_flagged:
            self._forged_flagged = True
            self._flag(
                f"the terminal showed {self.ends} end-of-command markers for "
                f"{self.occasions} prompts the person gave the shell occasion to print: "
                "a command printed the prompt hooks' markers"
            )
        status, cwd, line = ([*payload.split(";", 2), "", ""])[:3]
        if self.current is not None:  # the last report before the next key is the shell's
            self.current.reported = {
                "exit": int(status) if status.lstrip("-").isdigit() else None,
                "cwd": _b64(cwd),
                "shell_line": _b64(line),
            }

    def _emit_current(self) -> None:
        command, self.current = self.current, None
        if command is None:
            return
        reported = command.reported or {}
        self.emit(
            {
                "command": command.command,
                "typed": command.typed,
                "output": _text(bytes(command.output)),
                "truncated": command.truncated,
                "exit": reported.get("exit"),
                "cwd": reported.get("cwd"),
                "shell_line": reported.get("shell_line"),
            }
        )

    def _flag(self, text: str) -> None:
        if text not in self.flags:
            self.flags.append(text)

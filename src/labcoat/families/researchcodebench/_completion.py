"""Get the code for one masked block out of a model's reply.

Rules, in order:

1. Drop reasoning wrapped in `<think>...</think>` (everything up to the last `</think>`).
2. Fenced code (``` or ~~~, any info string, an unclosed last fence runs to the end):
   candidates are the fences tagged as Python (`python`, `py`, `python3`, ...) or untagged;
   if there are none, every fence. Fences that hold nothing but placeholder or marker
   lines are skipped.
3. Several candidates: when the masked file is given, a fence that echoes the code
   around the placeholder wins (the last such fence); otherwise the last fence wins,
   as upstream does.
4. No fence: the reply itself, less blank and prose lines before the first and after the
   last line of code (a prose line is mostly plain words and does not parse as Python).
5. In the chosen text, placeholder lines (`# TODO: Implement block ...`,
   `# Approximately K line(s) of code.`) and `<paper2code>` markers are dropped; when the
   masked file is given, echoed context before and after the placeholder is cut off.
6. The result is dedented (relative indentation kept). A reply whose first line lost its
   indentation while the rest kept theirs is repaired when that makes it parse.

The caller re-indents the result to the snippet (`reindent`, `insert_completion`).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from labcoat.families.researchcodebench._snippets import is_marker

_FENCE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_PYTHON_TAGS = {"", "python", "python3", "py", "py3", "ipython", "python2", "sage"}
_PLACEHOLDER = re.compile(
    r'^\s*#\s*(TODO: Implement block ".*"|Approximately \d+ line\(s\) of code\.)\s*$'
)
_THINK_END = re.compile(r"</think>", re.IGNORECASE)
_KEYWORD_START = re.compile(
    r"^(for|if|elif|else|while|def|class|with|try|except|finally|async|return|import|from|"
    r"lambda|raise|assert|del|global|nonlocal|yield|await|print)\b"
)
_WORD = re.compile(r"[`*_(]*[A-Za-z][A-Za-z'’-]*[`*_)]*[.,:;!?]?")


@dataclass(frozen=True)
class _Fence:
    lang: str
    lines: list[str]


def extract_code(reply: str, masked_source: str | None = None) -> str:
    """The block's code from `reply`, dedented to column 0, ending in a newline (or "").

    `masked_source` is the masked file the model was shown; with it, a reply that
    echoes surrounding code (a whole function or the whole file) is cut down to the block.
    """
    text = reply.replace("\r\n", "\n").replace("\r", "\n")
    ends = list(_THINK_END.finditer(text))
    if ends:
        text = text[ends[-1].end() :]

    context = _Context.of(masked_source) if masked_source is not None else None
    all_fences = _fences(text)
    fences = [f for f in all_fences if _clean(f.lines)]
    if all_fences and not fences:
        return ""  # only placeholders or empty fences
    if fences:
        python = [f for f in fences if f.lang in _PYTHON_TAGS or f.lang.startswith("python")]
        candidates = python or fences
        chosen = candidates[-1]
        if context is not None:
            echoing = [f for f in candidates if context.anchors(_clean(f.lines)) != (None, None)]
            if echoing:
                chosen = echoing[-1]
        lines = _clean(chosen.lines)
    else:
        lines = _clean(_strip_prose(_unquote(text).split("\n")))

    if context is not None:
        start, end = context.anchors(lines)
        lines = lines[(start or 0) : (end if end is not None else len(lines))]
    return _dedent(_trim_blank(lines))


def _fences(text: str) -> list[_Fence]:
    """Fenced blocks, CommonMark-style: a closing fence repeats the opening character."""
    out: list[_Fence] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        char, size = opened["fence"][0], len(opened["fence"])
        lang = (opened["info"].strip().split() or [""])[0].lower().lstrip("{.").rstrip("}")
        body: list[str] = []
        i += 1
        while i < len(lines):
            closing = lines[i].strip()
            if closing and set(closing) == {char} and len(closing) >= size:
                break
            body.append(lines[i])
            i += 1
        out.append(_Fence(lang, body))
        i += 1
    return out


def _clean(lines: list[str]) -> list[str]:
    kept = [line for line in lines if not _PLACEHOLDER.match(line) and not is_marker(line)]
    return kept if any(line.strip() for line in kept) else []


def _trim_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse(textwrap.dedent("\n".join(lines)))
    except (SyntaxError, ValueError):
        return False
    return True


def _unquote(text: str) -> str:
    stripped = text.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] == "`" and "\n" not in stripped:
        return stripped.strip("`")
    return text


def _is_prose(line: str) -> bool:
    """A sentence rather than code: mostly plain words and not valid Python on its own."""
    s = line.strip()
    if not s or s.startswith("#") or _KEYWORD_START.match(s):
        return False
    words = s.split()
    if len(words) < 3:
        return False
    plain = sum(bool(_WORD.fullmatch(w)) for w in words)
    return plain * 2 >= len(words) and not _parses([s])


def _strip_prose(lines: list[str]) -> list[str]:
    """Drop blank and prose lines before the first and after the last line of code."""
    start, end = 0, len(lines)
    while start < end and (not lines[start].strip() or _is_prose(lines[start])):
        start += 1
    while end > start and (not lines[end - 1].strip() or _is_prose(lines[end - 1])):
        end -= 1
    return lines[start:end]


def _dedent(lines: list[str]) -> str:
    if not lines:
        return ""
    code = textwrap.dedent("\n".join(lines)) + "\n"
    first, rest = lines[0], lines[1:]
    rest_indented = [line for line in rest if line.strip()]
    if (
        not _parses(code.splitlines())
        and first == first.lstrip()
        and rest_indented
        and all(line[0] in " \t" for line in rest_indented)
    ):
        # the first line was pasted without its indentation, the others kept theirs
        repaired = first + "\n" + textwrap.dedent("\n".join(rest)) + "\n"
        if _parses(repaired.splitlines()):
            return repaired
    return code


def _key(line: str) -> str:
    return line.strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


class _Context:
    """The code around the placeholder in the masked file, for cutting echoed context.

    An echo is only ever cut at the reply's edges: a reply that starts with the lines
    just before the placeholder, or ends with the lines just after it, each at the
    same indentation relative to the block as in the file. A block whose own body
    repeats lines of its surroundings (a loop body that predicts what follows the
    loop) is therefore never cut in its middle.
    """

    def __init__(self, before: list[str], after: list[str], indent: int) -> None:
        self.before = before  # raw lines, blank and marker lines removed
        self.after = after
        self.indent = indent  # the placeholder's indentation

    @classmethod
    def of(cls, masked: str) -> _Context | None:
        lines = masked.replace("\r\n", "\n").split("\n")
        todo = next((i for i, line in enumerate(lines) if _PLACEHOLDER.match(line)), None)
        if todo is None:
            return None
        end = todo
        while end < len(lines) and _PLACEHOLDER.match(lines[end]):
            end += 1
        keep = [line for line in lines[:todo] if line.strip() and not is_marker(line)]
        after = [line for line in lines[end:] if line.strip() and not is_marker(line)]
        return cls(keep, after, _indent(lines[todo]))

    def anchors(self, lines: list[str]) -> tuple[int | None, int | None]:
        """(index after the echoed leading context, index where echoed trailing context starts).

        Leading echo: the reply's first lines equal the last lines before the placeholder.
        Trailing echo: the reply's last lines equal the first lines after it. Either is
        accepted only when the reply keeps the file's indentation relative to the block
        (a consistent shift), and never when it would leave nothing of the block.
        """
        rows = [i for i, line in enumerate(lines) if line.strip()]
        raw = [lines[i] for i in rows]
        keys = [_key(line) for line in raw]

        start: int | None = None
        for t in range(min(len(keys) - 1, len(self.before)), 0, -1):
            echoed = self.before[len(self.before) - t :]
            # the block's first line stands at the block's indentation
            if keys[:t] == [_key(x) for x in echoed] and self._shifted(raw[:t], echoed, raw[t]):
                start = t
                break
        first = start or 0

        end: int | None = None
        for u in range(first + 1, len(keys)):
            n = len(keys) - u
            echoed = self.after[:n]
            block = min(raw[first:u], key=_indent)  # the block's least indented line
            if keys[u:] == [_key(x) for x in echoed] and self._shifted(raw[u:], echoed, block):
                end = u
                break

        return (
            rows[start - 1] + 1 if start is not None else None,
            rows[end] if end is not None else None,
        )

    def _shifted(self, reply: list[str], file: list[str], block_line: str) -> bool:
        """The echoed lines sit where the file has them, relative to the block's code."""
        if len(reply) != len(file):
            return False
        shifts = {_indent(r) - _indent(f) for r, f in zip(reply, file, strict=True)}
        return shifts == {_indent(block_line) - self.indent}

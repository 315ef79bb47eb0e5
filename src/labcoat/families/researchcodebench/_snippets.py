"""ResearchCodeBench snippets: parse `<paper2code>` markers, mask one snippet, fill it back in.

An annotated file marks regions with whole-line comments::

    # <paper2code name="NAME">
    ...code...
    # </paper2code name="NAME">

Regions nest; each region is one problem. Masking a region replaces its lines (inner
markers included) with a two-line placeholder at the region's indentation and drops
every other marker in the file.

Snippet ids: `FILE::NAME` for the first snippet with a given name in a file, then
`FILE::NAME#2`, `FILE::NAME#3`, ... in order of the opening markers. Ids are unique
within a paper and do not change when a snippet is added later in the file.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from labcoat._errors import TaskDataError
from labcoat._util.text_file import read_text

_OPEN = re.compile(r'^(?P<indent>\s*)#\s*<paper2code\s+name="(?P<name>[^"]+)">\s*$')
_CLOSE = re.compile(r'^(?P<indent>\s*)#\s*</paper2code\s+name="(?P<name>[^"]+)">\s*$')
# a comment that starts like a marker but is not a well-formed one: a typo. Comments that
# merely mention the tag (or comment a marker out, `# # <paper2code ...`) are left alone.
_NEAR_MARKER = re.compile(r"^\s*#\s*</?\s*paper2code\b")

TODO_LINE = '# TODO: Implement block "{name}"'
SIZE_LINE = "# Approximately {weight} line(s) of code."


def is_marker(line: str) -> bool:
    """True for an opening or closing `<paper2code>` marker line."""
    return bool(_OPEN.match(line) or _CLOSE.match(line))


def count_code_lines(text: str) -> int:
    """Lines that hold code: not blank and not a whole-line comment (upstream's K)."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


@dataclass(frozen=True)
class Snippet:
    """One marked region of an annotated file.

    `open_line`/`close_line` are 1-based line numbers of the markers. `body` is the
    reference code between them with every marker removed and the original indentation
    kept. `indent` is where the placeholder and a completion go: the smallest
    indentation of the non-blank lines inside the markers (upstream's rule; it equals
    the markers' own indentation in well-formed files). `weight` is K, the number of
    code lines in `body`; nested snippets' lines count again for every enclosing one.
    """

    id: str
    name: str
    file: str
    open_line: int
    close_line: int
    indent: str
    marker_indent: str
    depth: int
    parent: str | None
    children: tuple[str, ...]
    body: str
    weight: int

    @property
    def placeholder(self) -> str:
        """The two placeholder lines (with newline) that replace this snippet when masked."""
        return (
            f"{self.indent}{TODO_LINE.format(name=self.name)}\n"
            f"{self.indent}{SIZE_LINE.format(weight=self.weight)}\n"
        )


@dataclass(frozen=True)
class AnnotatedFile:
    """An annotated source file and its snippets, in order of their opening markers."""

    path: str
    lines: tuple[str, ...]
    snippets: tuple[Snippet, ...]

    def snippet(self, snippet_id: str) -> Snippet:
        for s in self.snippets:
            if s.id == snippet_id:
                return s
        raise KeyError(f"{self.path}: no snippet with id {snippet_id!r}")

    def by_name(self, name: str) -> list[Snippet]:
        """All snippets called `name` (names need not be unique)."""
        return [s for s in self.snippets if s.name == name]


@dataclass
class _Open:
    name: str
    indent: str
    line_no: int
    depth: int
    parent: _Open | None
    children: list[_Open]
    close_no: int = 0
    id: str = ""


def parse_annotated(
    text: str, path: str = "<string>", *, shown_as: str | None = None
) -> AnnotatedFile:
    """Parse the markers of an annotated file into its snippets.

    `path` is the file's path inside the paper folder (it goes into snippet ids);
    `shown_as` is how errors name the file (default: `path`).

    Raises TaskDataError naming `path:line` for a closing marker with nothing open, a
    closing marker that does not close the innermost open snippet, open and close
    markers at different indentation, a snippet never closed, and a comment that
    mentions `paper2code` without being a well-formed marker.
    """
    shown = shown_as or path

    def _where(line_no: int) -> str:
        return f"{shown}:{line_no}"

    lines = tuple(text.splitlines(keepends=True))
    stack: list[_Open] = []
    done: list[_Open] = []
    for no, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        opened, closed = _OPEN.match(line), _CLOSE.match(line)
        if opened:
            parent = stack[-1] if stack else None
            node = _Open(opened["name"], opened["indent"], no, len(stack), parent, [])
            if parent is not None:
                parent.children.append(node)
            stack.append(node)
            done.append(node)
        elif closed:
            name = closed["name"]
            if not stack:
                raise TaskDataError(
                    _where(no), None, f"closing marker for {name!r} but no snippet is open"
                )
            top = stack[-1]
            if top.name != name:
                raise TaskDataError(
                    _where(no),
                    None,
                    f"closing marker for {name!r} but the innermost open snippet is "
                    f"{top.name!r} (opened at line {top.line_no})",
                )
            if closed["indent"] != top.indent:
                raise TaskDataError(
                    _where(no),
                    None,
                    f"closing marker for {name!r} is indented {len(closed['indent'])} "
                    f"but its opening marker (line {top.line_no}) is indented {len(top.indent)}",
                )
            top.close_no = no
            stack.pop()
        elif _NEAR_MARKER.match(line):
            raise TaskDataError(
                _where(no),
                None,
                'malformed marker; expected # <paper2code name="NAME"> or '
                '# </paper2code name="NAME">',
            )
    if stack:
        top = stack[-1]
        raise TaskDataError(
            _where(top.line_no), None, f"snippet {top.name!r} is opened but never closed"
        )

    seen: dict[str, int] = {}
    for node in done:  # already in order of opening line
        seen[node.name] = seen.get(node.name, 0) + 1
        suffix = "" if seen[node.name] == 1 else f"#{seen[node.name]}"
        node.id = f"{path}::{node.name}{suffix}"

    snippets = tuple(_freeze(node, lines, path) for node in done)
    return AnnotatedFile(path=path, lines=lines, snippets=snippets)


def _freeze(node: _Open, lines: tuple[str, ...], path: str) -> Snippet:
    inside = lines[node.line_no : node.close_no - 1]  # between the markers, 0-based slice
    body = "".join(line for line in inside if not is_marker(line.rstrip("\r\n")))
    return Snippet(
        id=node.id,
        name=node.name,
        file=path,
        open_line=node.line_no,
        close_line=node.close_no,
        indent=_min_indent(inside, default=node.indent),
        marker_indent=node.indent,
        depth=node.depth,
        parent=node.parent.id if node.parent else None,
        children=tuple(child.id for child in node.children),
        body=body,
        weight=count_code_lines(body),
    )


def _min_indent(lines: tuple[str, ...], default: str) -> str:
    best: str | None = None
    for line in lines:
        stripped = line.rstrip("\r\n")
        if not stripped.strip():
            continue
        lead = stripped[: len(stripped) - len(stripped.lstrip())]
        if best is None or len(lead) < len(best):
            best = lead
    return default if best is None else best


def parse_annotated_file(folder: Path, rel_path: str) -> AnnotatedFile:
    """Read `folder/rel_path` and parse it; errors name the path as given in papers.yaml."""
    file = folder / rel_path
    try:
        text = read_text(file)
    except UnicodeDecodeError as exc:
        raise TaskDataError(file, None, f"not UTF-8 text ({exc.reason})") from exc
    return parse_annotated(text, rel_path, shown_as=str(file))


def _newline(af: AnnotatedFile) -> str:
    return "\r\n" if af.lines and af.lines[0].endswith("\r\n") else "\n"


def _without_markers(lines: tuple[str, ...]) -> str:
    return "".join(line for line in lines if not is_marker(line.rstrip("\r\n")))


def clean_source(af: AnnotatedFile) -> str:
    """The file with every marker line removed: the reference solution."""
    return _without_markers(af.lines)


def strip_markers(text: str) -> str:
    """Remove every marker line from source text (no validation)."""
    return _without_markers(tuple(text.splitlines(keepends=True)))


def _split(af: AnnotatedFile, snippet: Snippet) -> tuple[str, str]:
    before = af.lines[: snippet.open_line - 1]
    after = af.lines[snippet.close_line :]
    return _without_markers(before), _without_markers(after)


def mask_snippet(af: AnnotatedFile, snippet: Snippet) -> str:
    """The file as the model sees it: `snippet` replaced by its placeholder, no markers left."""
    prefix, suffix = _split(af, snippet)
    placeholder = snippet.placeholder.replace("\n", _newline(af))
    return prefix + placeholder + suffix


def reindent(code: str, indent: str) -> str:
    """Put dedented `code` at `indent`, keeping relative indentation; blank lines stay empty."""
    out = []
    for line in textwrap.dedent(code).splitlines():
        out.append(f"{indent}{line}\n" if line.strip() else "\n")
    return "".join(out)


def fill_snippet(af: AnnotatedFile, snippet: Snippet, code: str) -> str:
    """The file with `code` (re-indented to the snippet) in place of the snippet, no markers."""
    prefix, suffix = _split(af, snippet)
    return prefix + reindent(code, snippet.indent) + suffix


def insert_completion(masked: str, snippet: Snippet, code: str) -> str:
    """Replace the snippet's placeholder in `masked` with `code`, re-indented to the snippet.

    `masked` is the text `mask_snippet` returned. Raises ValueError when the placeholder
    is not found exactly once.
    """
    lines = masked.splitlines(keepends=True)
    todo = f"{snippet.indent}{TODO_LINE.format(name=snippet.name)}"
    size = f"{snippet.indent}{SIZE_LINE.format(weight=snippet.weight)}"
    hits = [
        i
        for i in range(len(lines) - 1)
        if lines[i].rstrip("\r\n") == todo and lines[i + 1].rstrip("\r\n") == size
    ]
    if len(hits) != 1:
        raise ValueError(
            f"placeholder for snippet {snippet.id!r} found {len(hits)} times in the masked file"
        )
    i = hits[0]
    return "".join(lines[:i]) + reindent(code, snippet.indent) + "".join(lines[i + 2 :])

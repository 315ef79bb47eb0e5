"""Task ids and names are plain text: no control characters, no invisible formatting.

A newline in an id breaks every one-line message and table that shows it; a bidi control
(U+202E RIGHT-TO-LEFT OVERRIDE) or a zero-width character makes an id read as another.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from labcoat._errors import TaskDataError, one_line
from labcoat._util.limits import quoted, short_line

# Cc: controls (newline, tab, NUL, DEL, C1); Cf: format (bidi controls, zero-width
# characters, BOM); Zl, Zp: line and paragraph separators; Cs, Co, Cn: surrogates, private
# use, unassigned
_UNSAFE = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


def unsafe_character(text: str) -> str | None:
    """The first character of `text` that is no plain text, described (`U+202E
    RIGHT-TO-LEFT OVERRIDE`), or None."""
    for char in text:
        if unicodedata.category(char) in _UNSAFE:
            name = unicodedata.name(char, "")
            return f"U+{ord(char):04X}" + (f" {name}" if name else "")
    return None


def check_name(text: str, file: str | Path, field: str | None, what: str = "an id") -> None:
    """A TaskDataError naming `file` and `field` when `text` holds a character that is
    not plain text."""
    bad = unsafe_character(text)
    if bad is not None:
        raise TaskDataError(
            file,
            field,
            f"{what} may not contain {bad} (a control or invisible character): {quoted(text)}",
        )


def escaped(text: str) -> str:
    """`text` with each character that is not plain text as its escape (`\\u202e`)."""
    if unsafe_character(text) is None:
        return text
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in _UNSAFE else c for c in text)


def error_line(text: object) -> str:
    """An error message as the one line the CLI prints: one line, no character that is not
    plain text (a path may hold one), values and the whole line shortened."""
    return short_line(escaped(one_line(text)))


def shown(text: str) -> str:
    """`text` with what is not plain text escaped (`a\\nb`), for a message or a table."""
    return text if unsafe_character(text) is None else repr(text)[1:-1]

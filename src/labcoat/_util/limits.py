"""Bounds on what labcoat reads from its user (docs/cli.md, "Limits on input"), so that
bad input is one short error line, promptly, and never minutes of parsing or gigabytes
of memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labcoat._errors import TaskDataError

MAX_DATA_FILE_BYTES = 5 * 1024 * 1024
"""A task data file labcoat reads itself (JSON, a paper's text, a secrets file)."""
MAX_YAML_BYTES = 1024 * 1024
"""A YAML file (manifest.yaml, config.yaml, labcoat.yaml, papers.yaml, ...): YAML parses
slowly (about 5 s a megabyte), and task YAML is a few kilobytes."""
MAX_NESTING = 100
"""Levels of lists and mappings in a YAML or JSON document (a rubric tree is two per level)."""
MAX_NODES = 1_000_000
"""Lists, mappings and values in one document, counting each use of a YAML alias."""
MAX_RUN_SAMPLES = 100_000
"""Samples in one run, epochs included (LABCOAT_MAX_RUN_SAMPLES overrides)."""
MAX_QUOTED = 200
"""Characters of a user's value quoted in an error line."""
MAX_LINE = 1000
"""Characters of an error line."""


def shortened(text: str, limit: int = MAX_QUOTED) -> str:
    """`text` cut to `limit` characters, with "…" where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quoted(value: object, limit: int = MAX_QUOTED) -> str:
    """`repr(value)` for an error line, no longer than `limit` characters."""
    return shortened(repr(value), limit)


def short_line(line: str) -> str:
    """An error line that stays readable: each word (a value, a path) at most MAX_QUOTED
    characters, the whole line at most MAX_LINE (its start and its end kept)."""
    words = [shortened(word) for word in line.split(" ")]
    line = " ".join(words)
    if len(line) <= MAX_LINE:
        return line
    tail = MAX_LINE // 3
    return line[: MAX_LINE - tail - 3] + " … " + line[-tail:]


def check_nesting(data: Any, file: str | Path) -> None:
    """A parsed YAML or JSON document is at most MAX_NESTING deep, holds at most MAX_NODES
    values (YAML aliases counted at each use), and does not contain itself (a YAML alias
    inside its own anchor); otherwise a TaskDataError naming the file."""
    size: dict[int, int] = {}  # id of a container -> its values, counted fully
    depth: dict[int, int] = {}  # id of a container -> levels below and including it
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if children_done:
            open_ids.discard(key)
            inner = [c for c in children if isinstance(c, dict | list)]
            depth[key] = 1 + max((depth[id(c)] for c in inner), default=0)
            size[key] = 1 + sum(size[id(c)] if isinstance(c, dict | list) else 1 for c in children)
            if depth[key] > MAX_NESTING:
                raise TaskDataError(file, None, f"nested more than {MAX_NESTING} levels deep")
            if size[key] > MAX_NODES:
                raise TaskDataError(
                    file, None, f"holds more than {MAX_NODES:,} values (YAML aliases included)"
                )
            continue
        if key in depth:
            continue  # a YAML alias to a container already measured
        if key in open_ids:
            raise TaskDataError(file, None, "a YAML alias refers to the node that contains it")
        if len(open_ids) >= MAX_NESTING:
            raise TaskDataError(file, None, f"nested more than {MAX_NESTING} levels deep")
        open_ids.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children)

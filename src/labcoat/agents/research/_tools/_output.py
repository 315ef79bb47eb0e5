"""Keeping tool output within what a model should read: head and tail, never just one.

Output can be cut twice: by the sandbox (past its per-stream cap, 10 MiB by default,
it keeps a head and a tail and puts a marker line with the stream's real size where
it cut) and here, to what a model should read. The model is told how much it did not
see in all, counting what the sandbox already dropped.
"""

from __future__ import annotations

import re

DEFAULT_OUTPUT_LIMIT = 16_000

# the line labcoat's sandbox server puts where it cut a stream (sandbox/_server.py)
SANDBOX_CUT = re.compile(
    r"\n\[\.\.\. sandbox cut (?P<cut>[\d,]+) bytes from the middle; "
    r"the stream was (?P<size>[\d,]+) bytes \.\.\.\]\n"
)


def truncate_middle(text: str, limit: int = DEFAULT_OUTPUT_LIMIT) -> str:
    """Keep the first and last halves of `limit` characters; say what was cut.

    Errors usually sit at the end and context at the start, so both are kept. Where the
    sandbox already cut the middle, the count includes what it cut (its marker gives
    bytes, so the count is "about" that many characters).
    """
    if len(text) <= limit:
        return text  # any sandbox marker stays in view and tells its own size
    half = limit // 2
    head_end, tail_start = half, len(text) - half
    unseen = 0
    for marker in SANDBOX_CUT.finditer(text):
        if marker.end() <= head_end or marker.start() >= tail_start:
            continue  # in view
        # cut the marker out whole rather than show half of it
        head_end = min(head_end, marker.start())
        tail_start = max(tail_start, marker.end())
        unseen += int(marker["cut"].replace(",", "")) - len(marker[0])
    cut = tail_start - head_end + unseen
    total = len(text) + unseen
    about = "about " if unseen else ""
    return (
        f"{text[:head_end]}\n[... {about}{cut:,} characters cut from the middle; "
        f"the output was {about}{total:,} characters ...]\n{text[tail_start:]}"
    )


def format_exec(
    returncode: int, stdout: str, stderr: str, limit: int = DEFAULT_OUTPUT_LIMIT
) -> str:
    parts = []
    if stdout:
        parts.append(stdout)
    if stderr:
        parts.append(f"[stderr]\n{stderr}")
    parts.append(f"[exit code {returncode}]")
    return truncate_middle("\n".join(parts), limit)

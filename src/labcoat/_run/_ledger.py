"""The spend ledger of a log folder: `<log_dir>/.labcoat/spend.jsonl`, append-only.

One JSON object a line: a run's budget as it starts (`{"budget": {...}}`), and spend
(`{"sample": ..., "family": ..., "model": ..., "usd": ..., "tokens": ...}` or
`{"sample": ..., "family": ..., "gpu_seconds": ...}`) as it happens, each line written
with one `write()` on a file opened for appending: a process killed (even by kill -9)
loses at most what it had not written yet, and a resumed run sums every line. A line
cut short by a crash is skipped when read.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

LEDGER_DIR = ".labcoat"
LEDGER_NAME = "spend.jsonl"


def ledger_path(log_dir: str | Path) -> Path:
    return Path(log_dir).expanduser() / LEDGER_DIR / LEDGER_NAME


class Ledger:
    """Appends records to, and reads them back from, one ledger file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        lines = "".join(
            json.dumps({"t": round(time.time(), 3), **r}, sort_keys=True) + "\n" for r in records
        )
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode())  # one write: the kernel has it once this returns
        finally:
            os.close(fd)

    def records(self) -> Iterator[dict[str, Any]]:
        """Every whole record, oldest first (none when there is no ledger yet)."""
        try:
            text = self.path.read_text(errors="replace")
        except FileNotFoundError:
            return
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # the last line of a process killed while writing it
                continue
            if isinstance(record, dict):
                yield record

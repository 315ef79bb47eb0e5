"""A `JudgeCache` on disk: one JSON file per content key, shared by every run on this machine.

Keys are `content_key` hashes of everything an answer depends on (model, prompt version,
the full prompt), so an entry never goes stale: a changed file or prompt is another key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from labcoat._util.atomic import atomic_write
from labcoat.sandbox import cache_dir

CACHE_SUBDIR = "judge"


def default_cache_root() -> Path:
    """`$LABCOAT_CACHE/judge`, else `~/.cache/labcoat/judge` (XDG_CACHE_HOME respected)."""
    return cache_dir() / CACHE_SUBDIR


class DiskCache:
    """JSON values under `root/<key[:2]>/<key>.json`; a corrupt entry reads as a miss."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_root()

    def __repr__(self) -> str:
        return f"DiskCache({str(self.root)!r})"

    def _file(self, key: str) -> Path:
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"not a content key: {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        try:
            return json.loads(self._file(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: Any) -> None:
        file = self._file(key)
        file.parent.mkdir(parents=True, exist_ok=True)
        # write then rename: concurrent runs never read half an entry
        atomic_write(file, json.dumps(value))

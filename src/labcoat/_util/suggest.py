"""A "did you mean ...?" for a name looked up among known ones (task ids, suites, families)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` naming the known names closest to `name`; "" when none is close."""
    close = difflib.get_close_matches(name, list(dict.fromkeys(known)), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""

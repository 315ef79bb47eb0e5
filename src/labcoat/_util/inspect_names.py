"""Names Inspect gives things, that labcoat reads back from its logs and results."""

from __future__ import annotations

NO_MODEL = "none/none"
"""The model of an eval run without one (an oracle, a person, a regrade's replay)."""

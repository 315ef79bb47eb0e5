"""Keys of a sample's Inspect store that one part of labcoat writes and another reads.

Each is declared here once, below every package that uses it (the sandbox writes
`labcoat:network` and the integrity checks read it; the research agent writes
`labcoat:steps` and the analysis reads it), so that a writer and its readers cannot
drift apart. A key that only its own module reads and writes stays in that module.
"""

from __future__ import annotations

NETWORK_KEY = "labcoat:network"
"""Every request through the sandbox's proxy (sandbox `_record`; integrity's findings)."""
DISK_KEY = "labcoat:disk"
"""Each time the sandbox's disk quota was reached (sandbox `_record`; integrity)."""
GPUS_KEY = "labcoat:gpus"
"""The GPUs a sample holds, and for how long (sandbox `_record`; the run's budget, the
analysis)."""
GRADER_GPUS_KEY = "labcoat:grader_gpus"
"""GPUs a grader step took for itself (PaperBench's reproduction): one record per step."""
STEPS_KEY = "labcoat:steps"
"""The research agent's steps (its budget; the analysis)."""
STOP_KEY = "labcoat:stopped_by"
"""What stopped the research agent (its stop rule; the analysis)."""
HANDOFFS_KEY = "labcoat:handoffs"
"""The research agent's context handoffs (the agent; the analysis)."""
AGENT_BUDGET_KEY = "labcoat:budget"
"""The research agent's limits as it ran (the agent; a score's provenance)."""

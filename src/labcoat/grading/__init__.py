"""Grading the agent cannot touch: protected sandboxes and views of the agent's workspace.

Graders, held-out data and reference solutions live only in grader sandboxes, which are
fresh bwrap sandboxes on the host that see the agent's workspace read-only. The agent's
own sandbox never holds them.
"""

from labcoat.grading._grader import grader_version, version_label
from labcoat.grading._keep import (
    KEEP_SPEC,
    KEPT,
    find_manifest,
    keep_workspace,
    kept_flags,
    restore_workspace,
)
from labcoat.grading._placement import (
    Reservation,
    grader_placement,
    pack_tree,
    run_placed,
    sample_reservation,
    unpack_tree,
    where_am_i,
)
from labcoat.grading._scoring_time import (
    bounded_by_scoring_time,
    scoring_deadline,
    within_scoring_time,
)
from labcoat.grading._sessions import exclusive_machine, grader_session
from labcoat.grading._workspace import (
    agent_workspace,
    copy_into_sandbox,
    network_attempts,
    stop_agent_processes,
)

__all__ = [
    "KEEP_SPEC",
    "KEPT",
    "Reservation",
    "agent_workspace",
    "bounded_by_scoring_time",
    "copy_into_sandbox",
    "exclusive_machine",
    "find_manifest",
    "grader_placement",
    "grader_session",
    "grader_version",
    "keep_workspace",
    "kept_flags",
    "network_attempts",
    "pack_tree",
    "restore_workspace",
    "run_placed",
    "sample_reservation",
    "scoring_deadline",
    "stop_agent_processes",
    "unpack_tree",
    "version_label",
    "where_am_i",
    "within_scoring_time",
]

"""A Ray worker's priority: the node's, not the nice 15 Ray starts its workers at.

Ray starts each worker process at niceness 15 (its `worker_niceness`), so that its own
daemons stay responsive. For labcoat the worker is the work: at nice 15 every other
process on the node comes first, a loaded node slowed each sample's eval ~25× here, and
a timing-based score measured the neighbours. So a worker runs at its raylet's priority,
as a local run does: the private instance starts its workers there
(`worker_niceness=0`), and on any other cluster `run_at_node_priority` is the workers'
setup hook, run before their imports. Lowering niceness needs root (CAP_SYS_NICE); as
another user it stays, each attempt records it, and the launcher says so.

Imports nothing of labcoat: a worker imports it before anything heavy.
"""

from __future__ import annotations

import contextlib
import os


def run_at_node_priority() -> tuple[int, int]:
    """Take the raylet's (parent's) niceness where ours is higher: (ours, the raylet's)."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        node = os.getpriority(os.PRIO_PROCESS, os.getppid())
    except OSError:
        return current, current
    if current > node:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, node)
    return os.getpriority(os.PRIO_PROCESS, 0), node

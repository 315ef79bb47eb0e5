"""`labcoat regrade`: grade kept final workspaces again with the current graders.

See docs/regrade.md. Scorers keep what they grade (`labcoat.grading.keep_workspace`);
this package finds those samples in a folder of logs, runs the families' own tasks on
them with a replay in place of the agent, and says what changed.
"""

from labcoat.regrade._find import (
    ORIGINAL,
    REGRADE_META,
    REGRADES_DIR,
    find_samples,
    is_regrade,
)
from labcoat.regrade._grader import grader_version, version_label
from labcoat.regrade._run import Regraded, regrade_logs

__all__ = [
    "ORIGINAL",
    "REGRADES_DIR",
    "REGRADE_META",
    "Regraded",
    "find_samples",
    "grader_version",
    "is_regrade",
    "regrade_logs",
    "version_label",
]

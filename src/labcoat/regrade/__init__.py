"""`labcoat regrade`: grade kept final workspaces again with the current graders.

See docs/regrade.md. Scorers keep what they grade (`labcoat.grading.keep_workspace`);
this package finds those samples in a folder of logs, runs the families' own tasks on
them with a replay in place of the agent, and says what changed.
"""

from labcoat.families import family_grader_version as grader_version
from labcoat.grading import version_label
from labcoat.regrade._find import (
    ORIGINAL,
    REGRADE_META,
    find_samples,
    is_regrade,
)
from labcoat.regrade._run import Regraded, regrade_logs
from labcoat.regrade._where import REGRADES_SUFFIX, regrade_folders, regrades_folder

__all__ = [
    "ORIGINAL",
    "REGRADES_SUFFIX",
    "REGRADE_META",
    "Regraded",
    "find_samples",
    "grader_version",
    "is_regrade",
    "regrade_folders",
    "regrade_logs",
    "regrades_folder",
    "version_label",
]

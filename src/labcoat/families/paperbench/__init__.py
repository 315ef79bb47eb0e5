"""PaperBench in its native format: papers, rubric trees, judges, JudgeEval, the Inspect task.

The agent replicates a paper from scratch into a repo with `reproduce.sh` (`paperbench`, the
task); the repo is reproduced in a fresh sandbox (`reproduce`); a judge (`check`, `llm`,
`dummy`, `random`) grades each leaf of the paper's weighted rubric tree; the root score is the
replication score. Code-Dev grades only the Code Development leaves and skips reproduction.
See docs/paperbench.md.
"""

from labcoat.families.paperbench._baselines import DummyJudge, RandomJudge
from labcoat.families.paperbench._cache import DiskCache, default_cache_root
from labcoat.families.paperbench._check_judge import (
    NO_CHECK,
    CheckJudge,
    CommandRequest,
    CommandResult,
    CommandRunner,
    host_command_runner,
)
from labcoat.families.paperbench._evidence import ReadingLimits
from labcoat.families.paperbench._files import FileView, LocalFiles
from labcoat.families.paperbench._graded import (
    GradedNode,
    LeafGrade,
    grade_tree,
    leaf_grades,
    load_graded_tree,
    load_tree,
    parse_graded_tree,
    rescore,
    weighted_score,
    with_weights_of,
)
from labcoat.families.paperbench._judge import (
    GroupJudge,
    GroupResult,
    Judge,
    JudgeCache,
    JudgeInput,
    JudgeResult,
    JudgeUsage,
    LeafGroup,
    MemoryCache,
    Reproduction,
    Rerun,
    content_key,
    leaf_groups,
)
from labcoat.families.paperbench._judge_eval import (
    Confusion,
    JudgeEvalCase,
    JudgeEvalItem,
    JudgeEvalReport,
    evaluate_judge,
    judge_eval,
    load_expected_results,
)
from labcoat.families.paperbench._judges import JUDGES, make_judge
from labcoat.families.paperbench._layout import PAPER_DIR, SUBMISSION_DIR
from labcoat.families.paperbench._llm_judge import LLMJudge
from labcoat.families.paperbench._logs import reduce_log
from labcoat.families.paperbench._manifest import FileChanges, diff, manifest
from labcoat.families.paperbench._paper import JUDGE_ONLY, Paper
from labcoat.families.paperbench._papers import (
    discover,
    find_paper_dirs,
    load_paper,
    load_papers,
    read_blacklist,
    read_split,
    select_entries,
    select_papers,
)
from labcoat.families.paperbench._preflight import preflight
from labcoat.families.paperbench._reproduce import (
    ReproductionError,
    ReproductionRecord,
    ReproductionSettings,
    reproduce,
)
from labcoat.families.paperbench._rubric import (
    CODE_DEVELOPMENT,
    CODE_EXECUTION,
    DATASET_AND_MODEL_ACQUISITION,
    FINEGRAINED_CATEGORIES,
    RESULT_ANALYSIS,
    TASK_CATEGORIES,
    NodePath,
    RubricNode,
    RubricStats,
    code_dev,
    code_only,
    dotted_path,
    format_path,
    load_rubric,
    parse_dotted_path,
    parse_rubric,
    resources_provided,
    rubric_stats,
)
from labcoat.families.paperbench._runner import sandbox_command_runner
from labcoat.families.paperbench._scoring import paperbench_scorer
from labcoat.families.paperbench._settings import PaperSettings, load_settings
from labcoat.families.paperbench._sidecar import Check, Sidecar, load_sidecar, parse_sidecar
from labcoat.families.paperbench._spec import SPEC
from labcoat.families.paperbench._task import paperbench, paperbench_oracle, paperbench_setup

__all__ = [
    "CODE_DEVELOPMENT",
    "CODE_EXECUTION",
    "DATASET_AND_MODEL_ACQUISITION",
    "FINEGRAINED_CATEGORIES",
    "JUDGES",
    "JUDGE_ONLY",
    "NO_CHECK",
    "PAPER_DIR",
    "RESULT_ANALYSIS",
    "SPEC",
    "SUBMISSION_DIR",
    "TASK_CATEGORIES",
    "Check",
    "CheckJudge",
    "CommandRequest",
    "CommandResult",
    "CommandRunner",
    "Confusion",
    "DiskCache",
    "DummyJudge",
    "FileChanges",
    "FileView",
    "GradedNode",
    "GroupJudge",
    "GroupResult",
    "Judge",
    "JudgeCache",
    "JudgeEvalCase",
    "JudgeEvalItem",
    "JudgeEvalReport",
    "JudgeInput",
    "JudgeResult",
    "JudgeUsage",
    "LLMJudge",
    "LeafGrade",
    "LeafGroup",
    "LocalFiles",
    "MemoryCache",
    "NodePath",
    "Paper",
    "PaperSettings",
    "RandomJudge",
    "ReadingLimits",
    "Reproduction",
    "ReproductionError",
    "ReproductionRecord",
    "ReproductionSettings",
    "Rerun",
    "RubricNode",
    "RubricStats",
    "Sidecar",
    "code_dev",
    "code_only",
    "content_key",
    "default_cache_root",
    "diff",
    "discover",
    "dotted_path",
    "evaluate_judge",
    "find_paper_dirs",
    "format_path",
    "grade_tree",
    "host_command_runner",
    "judge_eval",
    "leaf_grades",
    "leaf_groups",
    "load_expected_results",
    "load_graded_tree",
    "load_paper",
    "load_papers",
    "load_rubric",
    "load_settings",
    "load_sidecar",
    "load_tree",
    "make_judge",
    "manifest",
    "paperbench",
    "paperbench_oracle",
    "paperbench_scorer",
    "paperbench_setup",
    "parse_dotted_path",
    "parse_graded_tree",
    "parse_rubric",
    "parse_sidecar",
    "preflight",
    "read_blacklist",
    "read_split",
    "reduce_log",
    "reproduce",
    "rescore",
    "resources_provided",
    "rubric_stats",
    "sandbox_command_runner",
    "select_entries",
    "select_papers",
    "weighted_score",
    "with_weights_of",
]

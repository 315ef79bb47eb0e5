"""Analyses of labcoat runs, read from their `.eval` logs into pandas DataFrames.

    from labcoat.analysis import read_runs, task_summary, best_of_k_table
    data = read_runs("logs/")            # a folder, a log file, or an fsspec URL
    task_summary(data)                   # mean, SE, min, max, rates per task and model
    leaderboard(data)                    # per family and model: mean ± SE over tasks
    paired_differences(data)             # model vs model over shared tasks, with 95% CIs
    results_card(data)                   # versions, hashes, hardware, limits; mixed versions

See docs/analysis.md for every table and figure, and how to read them.
"""

from labcoat.analysis._behaviour import (
    action_density,
    density_correlation,
    phase_of,
    phase_summary,
    tool_phases,
)
from labcoat.analysis._bestofk import (
    best_of_k_at_budget,
    best_of_k_table,
    family_best_of_k,
    task_budget_hours,
)
from labcoat.analysis._card import ResultsCard, results_card
from labcoat.analysis._compare import paired_differences, paired_task_differences
from labcoat.analysis._curves import (
    AXES,
    Axis,
    Curve,
    curve_points,
    family_curve,
    mean_curve,
    run_curves,
    score_at,
)
from labcoat.analysis._data import RunData
from labcoat.analysis._errorbars import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    ClusteredMean,
    PairedDifference,
    clustered_se,
    paired_difference,
    task_bootstrap_band,
    task_mean_se,
)
from labcoat.analysis._family_tables import (
    cost_comparison,
    paperbench_categories,
    paperbench_papers,
    researchcodebench_ablation,
    researchcodebench_errors,
    researchcodebench_papers,
    researchgym_subtasks,
)
from labcoat.analysis._groups import ErrorsAs, run_scores
from labcoat.analysis._human import HumanRuns, read_human_csv
from labcoat.analysis._links import DEFAULT_VIEW_URL, view_link
from labcoat.analysis._mixes import Mix, mixed_provenance
from labcoat.analysis._read import Progress, read_runs
from labcoat.analysis._regrades import regrade_changes
from labcoat.analysis._reliability import reliability
from labcoat.analysis._stats import best_of_k, best_of_k_curve, mean_se, pearson, spearman
from labcoat.analysis._summary import TOLERANCE, leaderboard, task_summary
from labcoat.analysis._tdist import t_quantile

__all__ = [
    "AXES",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "DEFAULT_VIEW_URL",
    "TOLERANCE",
    "Axis",
    "ClusteredMean",
    "Curve",
    "ErrorsAs",
    "HumanRuns",
    "Mix",
    "PairedDifference",
    "Progress",
    "ResultsCard",
    "RunData",
    "action_density",
    "best_of_k",
    "best_of_k_at_budget",
    "best_of_k_curve",
    "best_of_k_table",
    "clustered_se",
    "cost_comparison",
    "curve_points",
    "density_correlation",
    "family_best_of_k",
    "family_curve",
    "leaderboard",
    "mean_curve",
    "mean_se",
    "mixed_provenance",
    "paired_difference",
    "paired_differences",
    "paired_task_differences",
    "paperbench_categories",
    "paperbench_papers",
    "pearson",
    "phase_of",
    "phase_summary",
    "read_human_csv",
    "read_runs",
    "regrade_changes",
    "reliability",
    "researchcodebench_ablation",
    "researchcodebench_errors",
    "researchcodebench_papers",
    "researchgym_subtasks",
    "results_card",
    "run_curves",
    "run_scores",
    "score_at",
    "spearman",
    "t_quantile",
    "task_bootstrap_band",
    "task_budget_hours",
    "task_mean_se",
    "task_summary",
    "tool_phases",
    "view_link",
]

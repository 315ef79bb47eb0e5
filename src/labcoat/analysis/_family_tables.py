"""Family-specific tables: PaperBench categories, ResearchCodeBench papers, errors and
the with/without-paper ablation, ResearchGym sub-tasks, and the cost comparison."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from labcoat.analysis._columns import TASK_KEYS
from labcoat.analysis._data import RunData
from labcoat.analysis._errorbars import clustered_se, paired_difference
from labcoat.analysis._family import label_of
from labcoat.analysis._family_researchcodebench import FAMILY as RCB
from labcoat.analysis._family_researchcodebench import NO_PAPER
from labcoat.analysis._groups import ErrorsAs, run_scores
from labcoat.analysis._stats import finite, mean_se


def _mean_se_rows(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    rows = []
    for key, group in df.groupby(keys, sort=True):
        mean, se = mean_se(pd.to_numeric(group[value], errors="coerce").tolist())
        rows.append(
            {**dict(zip(keys, key, strict=True)), "runs": len(group), "mean": mean, "se": se}
        )
    return pd.DataFrame(rows, columns=[*keys, "runs", "mean", "se"])


def paperbench_papers(data: RunData, errors_as: ErrorsAs = "zero") -> pd.DataFrame:
    """Replication score per (label, paper): mean ± SE over seeds (runs)."""
    runs = data.runs[data.runs["family"] == "paperbench"]
    runs = runs.assign(score=run_scores(runs, errors_as))
    table = _mean_se_rows(runs, ["label", "task_id"], "score")
    errors = runs.groupby(["label", "task_id"])["status"].apply(lambda s: int((s == "error").sum()))
    return table.merge(errors.rename("errors").reset_index(), on=["label", "task_id"], how="left")


def paperbench_categories(data: RunData, kind: str = "category") -> pd.DataFrame:
    """Score per (label, paper, rubric category) and per (label, category) over all papers
    (`paper` = `all`): the mean over scored runs. Within a paper the SE is over its runs;
    over all papers it is clustered by paper (`clustered_se`: runs of one paper are not
    independent), NaN with one paper. `papers` counts the papers behind a row. `kind`:
    `category` (task category) or `finegrained`."""
    parts = data.subtasks[
        (data.subtasks["family"] == "paperbench") & (data.subtasks["kind"] == kind)
    ]
    parts = parts.drop(columns=["paper"]).rename(columns={"id": "category", "task_id": "paper"})
    by_paper = _mean_se_rows(parts, ["label", "paper", "category"], "normalized").assign(papers=1)
    rows = []
    for (label, category), group in parts.groupby(["label", "category"], sort=True):
        scores = pd.to_numeric(group["normalized"], errors="coerce").tolist()
        c = clustered_se(scores, group["paper"].tolist())
        rows.append(
            {
                "label": label,
                "paper": "all",
                "category": category,
                "runs": len(group),
                "mean": c.mean,
                "se": c.se,
                "papers": c.tasks,
            }
        )
    overall = pd.DataFrame(rows, columns=by_paper.columns)
    return pd.concat([by_paper, overall], ignore_index=True)


def _true(value: object) -> bool:
    """True only for a true boolean (missing values are not passes)."""
    return isinstance(value, bool | np.bool_) and bool(value)


def _snippets(data: RunData) -> pd.DataFrame:
    snippets = data.subtasks[
        (data.subtasks["family"] == RCB) & (data.subtasks["kind"] == "snippet")
    ]
    errored = data.samples[(data.samples["family"] == RCB) & (data.samples["status"] == "error")]
    failed = errored.assign(
        kind="snippet",
        id=errored["sample_id"],
        paper=errored["task_id"],
        normalized=0.0,
        passed=False,
        failure="error (not graded)",
    )
    cols = ["run", "task_id", "label", "epoch", "id", "weight", "normalized", "passed", "failure"]
    return pd.concat([snippets[cols], failed[cols]], ignore_index=True)


def researchcodebench_papers(data: RunData) -> pd.DataFrame:
    """Per (label, paper): scaled pass@1 (lines-weighted %, mean ± SE over epochs), pass
    rate (% of snippets), snippets, and errored snippets (graded as failed)."""
    snippets = _snippets(data)
    rows = []
    for (label, paper), group in snippets.groupby(["label", "task_id"], sort=True):
        per_run = []
        for _, run in group.groupby("run"):
            w = pd.to_numeric(run["weight"], errors="coerce").fillna(1.0)
            v = pd.to_numeric(run["normalized"], errors="coerce").fillna(0.0)
            per_run.append(100 * float((w * v).sum() / w.sum()) if w.sum() > 0 else math.nan)
        mean, se = mean_se(per_run)
        rows.append(
            {
                "label": label,
                "paper": paper,
                "runs": len(per_run),
                "snippets": int(group["id"].nunique()),
                "scaled_pass_at_1": mean,
                "se": se,
                "pass_rate": 100 * float(group["passed"].map(_true).mean()),
                "errors": int((group["failure"] == "error (not graded)").sum()),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "label",
            "paper",
            "runs",
            "snippets",
            "scaled_pass_at_1",
            "se",
            "pass_rate",
            "errors",
        ],
    )


def researchcodebench_errors(data: RunData) -> pd.DataFrame:
    """Failure classes per label: count and share of the failed snippets."""
    snippets = _snippets(data)
    failed = snippets[snippets["passed"] != True]  # noqa: E712
    counts = failed.groupby(["label", "failure"]).size().rename("count").reset_index()
    totals = counts.groupby("label")["count"].transform("sum")
    return counts.assign(share=counts["count"] / totals).sort_values(
        ["label", "count"], ascending=[True, False], ignore_index=True
    )


def researchcodebench_ablation(data: RunData) -> pd.DataFrame:
    """Scaled pass@1 with and without the paper, per (model, paper) and over all papers;
    `difference` = with − without (the paper's help). Over all papers, `se` and the 95%
    interval `ci_low`..`ci_high` are paired over papers (`paired_difference`); NaN on a
    single paper's row, whose only spread is over epochs."""
    papers = researchcodebench_papers(data)
    runs = data.runs[data.runs["family"] == RCB].drop_duplicates("label")
    base, has_paper = {}, {}
    for label, model, agent, variant, with_paper in zip(
        runs["label"],
        runs["model"],
        runs["agent"],
        runs["variant"],
        runs["with_paper"],
        strict=True,
    ):
        rest = ", ".join(w for w in str(variant or "").split(", ") if w and w != NO_PAPER)
        base[label], has_paper[label] = label_of(model, agent, rest), with_paper is not False
    papers = papers.assign(model=papers["label"].map(base), side=papers["label"].map(has_paper))
    rows = []
    for model, group in papers.groupby("model", sort=True):
        with_, without = group[group["side"]], group[~group["side"]]
        if with_.empty or without.empty:
            continue
        both = with_.merge(without, on="paper", suffixes=("_with", "_without"))
        for paper, a, b in zip(
            both["paper"],
            both["scaled_pass_at_1_with"],
            both["scaled_pass_at_1_without"],
            strict=True,
        ):
            rows.append(
                {
                    "model": model,
                    "paper": paper,
                    "with_paper": a,
                    "without_paper": b,
                    "difference": a - b,
                }
            )
        if len(both) > 1:
            a, b = both["scaled_pass_at_1_with"].mean(), both["scaled_pass_at_1_without"].mean()
            paired = paired_difference(
                dict(zip(both["paper"], both["scaled_pass_at_1_with"], strict=True)),
                dict(zip(both["paper"], both["scaled_pass_at_1_without"], strict=True)),
            )
            rows.append(
                {
                    "model": model,
                    "paper": "all",
                    "with_paper": a,
                    "without_paper": b,
                    "difference": a - b,
                    "se": paired.se,
                    "ci_low": paired.ci_low,
                    "ci_high": paired.ci_high,
                }
            )
    return pd.DataFrame(rows, columns=ABLATION_COLUMNS)


ABLATION_COLUMNS = [
    "model",
    "paper",
    "with_paper",
    "without_paper",
    "difference",
    "se",
    "ci_low",
    "ci_high",
]


def researchgym_subtasks(data: RunData) -> pd.DataFrame:
    """Per (label, task, sub-task): the share of runs that completed it (every metric
    valid; `mean` ± `se` over runs), and the share whose values beat the description's
    best baselines on every metric."""
    parts = data.subtasks[
        (data.subtasks["family"] == "researchgym") & (data.subtasks["kind"] == "subtask")
    ]
    parts = parts.assign(_complete=parts["valid"].astype(float))
    table = _mean_se_rows(parts, ["label", "task_id", "id"], "_complete")
    rates = parts.groupby(["label", "task_id", "id"]).agg(
        valid_rate=("valid", lambda s: s.astype(float).mean()),
        beats_baseline_rate=("beats_baseline", lambda s: s.dropna().astype(float).mean()),
        primary=("primary", "first"),
    )
    return table.merge(rates.reset_index(), on=["label", "task_id", "id"], how="left")


def cost_comparison(data: RunData, human_hourly_usd: float | None = None) -> pd.DataFrame:
    """Per (family, task, label): mean score, hours, cost and GPU-hours per run (GPU-seconds
    held, every GPU counted), and score per dollar.

    Human runs cost what the CSV says, else hours x `human_hourly_usd` when given."""
    runs = data.runs
    cost = pd.to_numeric(runs["cost"], errors="coerce")
    hours = pd.to_numeric(runs["run_seconds"], errors="coerce") / 3600
    gpu_hours = pd.to_numeric(runs["gpu_seconds"], errors="coerce") / 3600
    if human_hourly_usd is not None:
        human = (runs["agent"] == "human") & cost.isna()
        cost = cost.where(~human, hours * human_hourly_usd)
    df = runs.assign(_cost=cost, _hours=hours, _gpu_hours=gpu_hours, _score=run_scores(runs))
    rows = []
    for (family, task_id, label), g in df.groupby(TASK_KEYS, sort=True):
        costs = finite(g["_cost"].tolist())
        mean_cost = sum(costs) / len(costs) if costs else math.nan
        score = g["_score"].mean()
        rows.append(
            {
                "family": family,
                "task_id": task_id,
                "label": label,
                "runs": len(g),
                "mean_score": score,
                "mean_hours": g["_hours"].mean(),
                "mean_cost": mean_cost,
                "mean_gpu_hours": g["_gpu_hours"].mean(),
                "cost_per_hour": mean_cost / g["_hours"].mean() if costs else math.nan,
                "score_per_dollar": score / mean_cost if costs and mean_cost > 0 else math.nan,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "family",
            "task_id",
            "label",
            "runs",
            "mean_score",
            "mean_hours",
            "mean_cost",
            "mean_gpu_hours",
            "cost_per_hour",
            "score_per_dollar",
        ],
    )

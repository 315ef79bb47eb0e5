"""Scoring a PaperBench sample: reproduction, then a judge, then the replication score.

raw = normalized = the root score of the graded rubric (the replication score, in [0, 1]);
it is not divided by the oracle's score. Fail closed: a reproduction that failed for
infrastructure reasons, a judge that raised, or a leaf the judge or a check could not grade
(other than a leaf with no check at all) makes the sample an error, never a zero.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import store
from pydantic import JsonValue

import labcoat.grading as grading
from labcoat._errors import LabcoatError
from labcoat.agents.research._tools.web import ATTEMPTS_KEY
from labcoat.families._provenance import JUDGE_INFO
from labcoat.families._score import NORMALIZED, RAW, mean_scored, research_score, stderr_scored
from labcoat.families.paperbench._check_judge import NO_CHECK, CheckJudge
from labcoat.families.paperbench._files import LocalFiles
from labcoat.families.paperbench._graded import GradedNode
from labcoat.families.paperbench._integrity import blocklist_report
from labcoat.families.paperbench._judge import Judge, JudgeInput, JudgeResult, MemoryCache, Rerun
from labcoat.families.paperbench._judges import make_judge
from labcoat.families.paperbench._layout import SUBMISSION_DIR
from labcoat.families.paperbench._paper import Paper
from labcoat.families.paperbench._papers import load_paper
from labcoat.families.paperbench._reproduce import ReproductionSettings, reproduce_placed
from labcoat.families.paperbench._rubric import (
    TASK_CATEGORIES,
    RubricNode,
    code_dev,
    dotted_path,
    resources_provided,
)
from labcoat.families.paperbench._runner import sandbox_command_runner
from labcoat.families.paperbench._sidecar import SEED, draw_check_seed, load_sidecar
from labcoat.grading import (
    KEPT,
    agent_workspace,
    bounded_by_scoring_time,
    keep_workspace,
    kept_flags,
    stop_agent_processes,
    within_scoring_time,
)
from labcoat.integrity import INTEGRITY_FLAGS, Blocklist

EXPLANATION_CHARS = 300
# One BLAS thread for check commands: their numbers do not depend on the machine's core
# count. The reproduction itself runs as the submission's reproduce.sh sets it up.
GRADER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass(frozen=True)
class SampleSpec:
    """What the task decided for one sample (kept in its metadata as `paperbench`)."""

    paper_dir: str
    judge: str
    judge_model: str | None
    judge_cache: bool
    code_dev: bool
    resources_provided: bool
    reproduce_timeout_minutes: float
    requirements: tuple[str, ...]
    memory_mb: int
    reproduce_retries: int
    network: bool = False
    blocklist: dict[str, list[str]] | None = None
    reproduce_gpus: int = 0

    @classmethod
    def of(cls, metadata: dict[str, Any]) -> SampleSpec:
        m = dict(metadata["paperbench"])
        m["requirements"] = tuple(m["requirements"])
        return cls(**m)

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "requirements": list(self.requirements)}


def rubric_for(paper: Paper, spec: SampleSpec) -> RubricNode:
    """The rubric this sample is graded on: Code-Dev's reduction, resources reweighting."""
    rubric = code_dev(paper.rubric) if spec.code_dev else paper.rubric
    if spec.resources_provided:
        rubric = resources_provided(rubric)
    return rubric


def rerun_env(paper: Paper, spec: SampleSpec) -> dict[str, str] | None:
    """The variables of the re-seeded second reproduction the paper's sidecar asks for, with
    `{seed}` drawn now; None when there is none (other judges, Code-Dev, no `rerun:`)."""
    if spec.judge != "check" or spec.code_dev or paper.sidecar_path is None:
        return None
    rerun = load_sidecar(paper.sidecar_path, paper.rubric).rerun
    if rerun is None:
        return None
    seed = str(secrets.randbelow(1_000_000) + 1)
    return {k: v.replace(SEED, seed) for k, v in rerun.env.items()}


@asynccontextmanager
async def judge_for(
    spec: SampleSpec, submission: Path, executed: Path | None, rerun: Path | None = None
) -> AsyncIterator[Judge]:
    """The sample's judge; the check judge runs commands in grader sandboxes it closes after."""
    if spec.judge == "check":
        roots = {"submission": submission, "executed": executed or submission}
        if rerun is not None:
            roots["rerun"] = rerun
        async with sandbox_command_runner(
            roots, requirements=spec.requirements, memory_mb=spec.memory_mb, env=GRADER_ENV
        ) as runner:
            yield CheckJudge(runner=runner)
    elif spec.judge == "llm":
        cache = None if spec.judge_cache else MemoryCache()  # None: the disk cache
        yield make_judge("llm", model=spec.judge_model, cache=cache)
    else:
        yield make_judge(spec.judge)


def blocklist_flags(record: dict[str, Any]) -> list[str]:
    """The blacklist record's findings as integrity flags."""
    if not record.get("flagged"):
        return []
    return [
        f"blacklist: {len(record.get('transcript_hits', []))} mention(s) in the transcript, "
        f"{len(record.get('submission_hits', {}))} file(s) of the submission, "
        f"{len(record.get('network_refused', []))} refused request(s) (see `blocklist`)"
    ]


def grader_failures(tree: GradedNode) -> list[str]:
    """Leaves the judge could not grade for a reason other than having no check."""
    return [
        f"{dotted_path(leaf.address(path))} ({leaf.id}): {leaf.explanation[:200]}"
        for path, leaf in tree.leaves()
        if not leaf.valid_score and leaf.explanation != NO_CHECK
    ]


def compact_tree(tree: GradedNode) -> dict[str, Any]:
    """The graded tree for the log: leaves with short explanations, internal scores by path."""
    by_category: dict[str, dict[str, int]] = {}
    leaves = []
    nodes = {}
    for path, node in tree.walk():
        address = dotted_path(node.address(path))
        if not node.is_leaf:
            nodes[address or "(root)"] = round(node.score, 4)
            continue
        cat = node.task_category or "(none)"
        counts = by_category.setdefault(cat, {"leaves": 0, "passed": 0, "invalid": 0})
        counts["leaves"] += 1
        counts["passed"] += int(node.score >= 0.5)
        counts["invalid"] += int(not node.valid_score)
        leaves.append(
            {
                "path": address,
                "id": node.id,
                "category": cat,
                "weight": node.weight,
                "score": node.score,
                "valid": node.valid_score,
                "explanation": node.explanation[:EXPLANATION_CHARS],
            }
        )
    order = {c: i for i, c in enumerate(TASK_CATEGORIES)}
    return {
        "score": tree.score,
        "by_category": dict(sorted(by_category.items(), key=lambda kv: order.get(kv[0], 99))),
        "nodes": nodes,
        "leaves": leaves,
    }


@scorer(metrics={NORMALIZED: [mean_scored(), stderr_scored()], RAW: [mean_scored()]})
def paperbench_scorer():
    """Reproduce (unless Code-Dev), judge, and report the replication score."""

    @bounded_by_scoring_time
    async def score(state: TaskState, target: Target) -> Score:
        spec = SampleSpec.of(state.metadata)
        paper = load_paper(spec.paper_dir)
        rubric = rubric_for(paper, spec)
        await stop_agent_processes()
        # the submission and the agent's web searches (the blocklist report reads them)
        kept = await keep_workspace(state, SUBMISSION_DIR, store_keys=(ATTEMPTS_KEY,))
        network_log = grading.network_attempts()
        blocklist = Blocklist.from_json(state.metadata.get("blocklist"))
        messages = [
            m
            for m in state.messages
            if m.role != "system" and not (m.role == "user" and m.text == state.input_text)
        ]
        settings = ReproductionSettings(
            timeout_s=within_scoring_time(spec.reproduce_timeout_minutes * 60),
            requirements=spec.requirements,
            memory_mb=spec.memory_mb,
            retries=spec.reproduce_retries,
            network=spec.network,
            blocklist=spec.blocklist,
            gpus=spec.reproduce_gpus,
        )
        record = rerun_record = check_seed = None
        env = rerun_env(paper, spec)
        async with agent_workspace(SUBMISSION_DIR) as submission, AsyncExitStack() as stack:
            executed = rerun_dir = None
            rerun = None
            if not spec.code_dev:
                record, executed = await stack.enter_async_context(
                    reproduce_placed(submission, settings)
                )
                transcript().info({"reproduction": record.to_json()}, source="labcoat.paperbench")
            if executed is not None and env is not None:
                # the same submission again, on a fresh copy, with a changed seed
                again = replace(settings, env={**settings.env, **env})
                rerun_record, rerun_dir = await stack.enter_async_context(
                    reproduce_placed(submission, again)
                )
                # drawn only now, after both runs: reproduce.sh never sees which seeds the
                # recompute checks will pick
                check_seed = draw_check_seed()
                rerun_info: dict[str, JsonValue] = {
                    "env": dict(env),
                    "check_seed": check_seed,
                    **rerun_record.to_json(),
                }
                transcript().info({"rerun": rerun_info}, source="labcoat.paperbench")
                rerun = Rerun(LocalFiles(rerun_dir), rerun_record.reproduction(), env, check_seed)
            judge = await stack.enter_async_context(
                judge_for(spec, submission, executed, rerun_dir)
            )
            result: JudgeResult = await judge.judge(
                JudgeInput(
                    paper,
                    rubric,
                    LocalFiles(submission),
                    LocalFiles(executed) if executed is not None else None,
                    record.reproduction() if record is not None else None,
                    code_dev=spec.code_dev,
                    rerun=rerun,
                )
            )
            integrity = blocklist_report(
                blocklist, messages, submission, store().get(ATTEMPTS_KEY, []), network_log
            )
        summary = compact_tree(result.tree)
        failures = grader_failures(result.tree)
        if failures:
            transcript().info({"graded_summary": summary}, source="labcoat.paperbench")
            raise LabcoatError(
                f"{paper.id}: the {result.judge} judge could not grade {len(failures)} leaf/leaves "
                f"(a grading failure, not a zero): " + "; ".join(failures[:5])
            )
        value = result.score
        no_check = result.invalid_leaves
        explanation = (
            f"replication score {value:.3f} from the {result.judge} judge on "
            f"{sum(1 for _ in result.tree.leaves())} leaves"
            + (f" ({no_check} leaves without a check scored 0)" if no_check else "")
            + (" (Code-Dev: no reproduction)" if spec.code_dev else "")
        )
        return research_score(
            value,
            value,
            explanation=explanation,
            metadata={
                "judge": result.judge,
                # the model the judge called and its prompts (the provenance's `judge`)
                JUDGE_INFO: result.identity(),
                "judge_usage": result.usage.to_json(),
                # one line each, for a person to review; they do not change the score
                INTEGRITY_FLAGS: list(result.flags) + blocklist_flags(integrity) + kept_flags(kept),
                "invalid_leaves": no_check,
                # the graded rubric in PaperBench's own format (what analysis reads), and
                # a compact view of it (counts by category, short explanations)
                "graded_tree": result.tree.to_dict(),
                "graded_summary": summary,
                "reproduction": record.to_json() if record is not None else None,
                "rerun": (
                    {"env": env, "check_seed": check_seed, **rerun_record.to_json()}
                    if rerun_record is not None
                    else None
                ),
                "variant": "Code-Dev" if spec.code_dev else None,
                "blocklist": integrity,
                "settings": spec.to_json(),
                KEPT: kept,
            },
        )

    return score

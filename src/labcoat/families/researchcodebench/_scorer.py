"""The scorer: the completion goes into the masked file, the paper's tests decide.

Score value: `raw` = `normalized` = 1 when the tests pass, else 0, and `weight` = the
snippet's lines of code, so a paper's (weighted) normalized score is its scaled pass@1
as a fraction. The metadata says why: the failure kind, the exception, flags raised
against the completion (reaching for the tests or reference code, edits outside the
block) and `weak_test` when the tests pass with the placeholder left in.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from labcoat._unavailable import unavailable
from labcoat.families._score import NORMALIZED, WEIGHT, research_score
from labcoat.families.researchcodebench._completion import extract_code
from labcoat.families.researchcodebench._edits import block_from_edit, placeholder_index
from labcoat.families.researchcodebench._failures import suspicious_access
from labcoat.families.researchcodebench._grading import TestRun, Watch, shared_pool
from labcoat.families.researchcodebench._samples import AGENT_WORKDIR, SnippetRef
from labcoat.families.researchcodebench._screen import screen_completion
from labcoat.families.researchcodebench._snippets import (
    Snippet,
    insert_completion,
    mask_snippet,
    reindent,
)
from labcoat.grading import (
    KEPT,
    agent_workspace,
    keep_workspace,
    kept_flags,
    stop_agent_processes,
)
from labcoat.integrity import INTEGRITY_FLAGS

OUTPUT_TAIL = 4000  # characters of the test output kept in the score's metadata


def _weighted(scores: list[SampleScore]) -> tuple[float, float, int]:
    passed = total = 0.0
    for s in scores:
        value = s.score.value
        if isinstance(value, dict) and isinstance(value.get(NORMALIZED), int | float):
            weight = float(value.get(WEIGHT, 1.0))
            passed += weight * float(value[NORMALIZED])
            total += weight
    return passed, total, len(scores)


@metric
def scaled_pass_at_1() -> Metric:
    """100 × passed lines / all lines (snippets weighted by their lines of code)."""

    def compute(scores: list[SampleScore]) -> float:
        passed, total, _ = _weighted(scores)
        return 100.0 * passed / total if total else 0.0

    return compute


@metric
def pass_rate() -> Metric:
    """100 × passed snippets / snippets."""

    def compute(scores: list[SampleScore]) -> float:
        values = [
            float(s.score.value[NORMALIZED])
            for s in scores
            if isinstance(s.score.value, dict)
            and isinstance(s.score.value.get(NORMALIZED), int | float)
        ]
        return 100.0 * sum(values) / len(values) if values else 0.0

    return compute


async def _agent_block(ref: SnippetRef, masked: str, snippet: Snippet) -> tuple[str, list[str]]:
    await stop_agent_processes()
    async with agent_workspace(AGENT_WORKDIR) as home:
        file = home / ref.file
        if not file.is_file():
            return "", [f"the agent's workspace has no {ref.file}"]
        edited = file.read_text(encoding="utf-8", errors="replace")
    edit = block_from_edit(masked, edited, snippet)
    flags = ["edited code outside the block (discarded)"] if edit.outside else []
    return edit.code, flags


def _describe(run: TestRun, passed: bool, code: str, flags: list[str]) -> str:
    if passed:
        text = "passed" + ("" if code.strip() else " with the placeholder left in (weak test)")
    else:
        failure = run.failure()
        assert failure is not None
        detail = ": ".join(p for p in (failure.exception, failure.message) if p)
        text = f"failed: {failure.kind.value}" + (f" ({detail[:300]})" if detail else "")
    return text + "".join(f"; flagged: {flag}" for flag in flags)


def _reference(masked: str, snippet: Snippet, path: str) -> tuple[dict[str, str], Watch]:
    """The file with the reference block in its place, as the oracle fills it, and where
    it sits: what the grader runs to learn what the reference block changes in place."""
    code = extract_code(f"```python\n{textwrap.dedent(snippet.body)}```\n", masked)
    first = placeholder_index(masked.splitlines(), snippet) + 1
    last = first + len(reindent(code, snippet.indent).splitlines()) - 1
    return {path: insert_completion(masked, snippet, code)}, Watch(path, first, last)


@scorer(metrics=[scaled_pass_at_1(), pass_rate()])
def researchcodebench_scorer():
    """Insert the completion, run the paper's tests in a protected sandbox."""

    async def score(state: TaskState, target: Target) -> Score:
        ref = SnippetRef.of(state.metadata)
        paper, af, snippet = ref.resolve()
        masked = mask_snippet(af, snippet)
        if ref.mode == "agent":
            code, flags = await _agent_block(ref, masked, snippet)
            kept = await keep_workspace(state, AGENT_WORKDIR)  # the agent has stopped
        else:
            reply = state.output.completion if state.output else ""
            code, flags = extract_code(reply, masked), []
            kept = await keep_workspace(state, None, submission=True)
        flags += kept_flags(kept)
        flags += suspicious_access(
            code,
            test_script=paper.test_script,
            reference_modules=tuple(f.rsplit("/", 1)[-1][:-3] for f in paper.reference_files()),
        )

        if code.strip():
            filled = insert_completion(masked, snippet, code)
            first = placeholder_index(masked.splitlines(), snippet) + 1
            size = len(reindent(code, snippet.indent).splitlines())
            watch: Watch | None = Watch(af.path, first, first + size - 1)
        else:  # nothing to insert: the placeholder stays (the noop's case)
            filled, watch = masked, None
        # what the completion may reach, before it runs in the process that decides
        refused = screen_completion(filled, watch.first_line, watch.last_line) if watch else []
        if refused:
            run = TestRun(None, "", "", False, 0.0, refused=tuple(refused), runner="refused")
            run = replace(run, isolation="not run")
        else:
            run = await shared_pool().grade(
                paper,
                {af.path: filled},
                environment=ref.environment,
                timeout=ref.timeout,
                watch=watch,
                reference=_reference(masked, snippet, af.path),
            )
        if run.needs_network:
            # not the completion's doing: the paper's tests download something
            raise unavailable(f"needs network ({run.network[0]})")
        flags += [f"refused before running: the completion {what}" for what in run.refused]
        flags += [f"at run time, the completion {what}" for what in run.runtime_flags]
        passed = run.passed
        failure = run.failure()
        metadata: dict[str, Any] = {
            "paper": ref.paper,
            "snippet": ref.snippet,
            "weight": snippet.weight,
            "passed": passed,
            "failure": failure.kind.value if failure else None,
            "exception": failure.exception if failure else None,
            "message": failure.message if failure else None,
            "flags": flags,
            # read by the integrity inspector: static flags label a run, run-time ones
            # (the completion did it while the tests ran) also fail it
            INTEGRITY_FLAGS: list(flags),
            "weak_test": passed and not code.strip(),
            "code": code,
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "time_limit": run.limit,
            "seconds": round(run.seconds, 3),
            "cpu_seconds": round(run.cpu_seconds, 3) if run.cpu_seconds is not None else None,
            "report": run.report,
            "environment_notes": list(ref.environment_notes),
            "isolation": run.isolation,
            "runner": run.runner,
            # changed in place by the completion, not by the reference block: put back
            # after each call in the run that decided
            "put_back": list(run.put_back),
            "stdout": run.stdout[-OUTPUT_TAIL:],
            "stderr": run.stderr[-OUTPUT_TAIL:],
            KEPT: kept,
        }
        value = 1.0 if passed else 0.0
        return research_score(
            value,
            value,
            explanation=_describe(run, passed, code, flags),
            metadata=metadata,
            weight=float(snippet.weight),
        )

    return score

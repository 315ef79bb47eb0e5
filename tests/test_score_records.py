"""Every score says how its sample was isolated (score metadata `sandbox`)."""

from __future__ import annotations

from labcoat.families._score import SANDBOX, research_score
from labcoat.sandbox import isolation


def test_a_score_outside_any_sample_sandbox_records_the_mode() -> None:
    """ResearchCodeBench's samples have no sandbox of their own (labcoat's grader
    sandboxes run them): the score records the mode those run in."""
    score = research_score(1.0, 1.0)
    assert score.metadata == {SANDBOX: {"isolation": str(isolation())}}


def test_a_family_s_own_record_is_kept() -> None:
    score = research_score(0.5, 0.5, metadata={SANDBOX: {"isolation": "given"}, "x": 1})
    assert score.metadata == {SANDBOX: {"isolation": "given"}, "x": 1}

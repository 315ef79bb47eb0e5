"""Every score says how its sample was isolated (score metadata `sandbox`)."""

from __future__ import annotations

from labcoat.families._provenance import PROVENANCE
from labcoat.families._score import SANDBOX, research_score
from labcoat.sandbox import isolation


def test_a_score_outside_any_sample_sandbox_records_the_mode() -> None:
    """ResearchCodeBench's samples have no sandbox of their own (labcoat's grader
    sandboxes run them): the score records the mode those run in."""
    score = research_score(1.0, 1.0)
    assert score.metadata[SANDBOX] == {"isolation": str(isolation())}
    assert set(score.metadata) == {SANDBOX, PROVENANCE}  # and its provenance


def test_a_family_s_own_record_is_kept() -> None:
    given = {SANDBOX: {"isolation": "given"}, PROVENANCE: {"given": True}, "x": 1}
    assert research_score(0.5, 0.5, metadata=given).metadata == given

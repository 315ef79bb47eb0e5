"""ResearchCodeBench (Hua et al., 2025): fill in masked snippets of papers' code.

A pset folder holds `papers.yaml` and one folder per paper with annotated code, the
paper text and `paper2code_test.py`. Every `<paper2code>` region is one problem; the
paper's unit tests decide, and scaled pass@1 weighs each snippet by its lines of code.

The sandbox-free core loads and checks the pset, masks and fills snippets, reads
completions and test runs, and computes the figures. `_grading` runs the tests in
protected bwrap sandboxes, and `_task` is the Inspect task `researchcodebench`.
"""

from __future__ import annotations

from labcoat.families.researchcodebench._aggregate import (
    SnippetResult,
    published_scores,
    read_overall_stats,
    summarize,
    summarize_by_model,
)
from labcoat.families.researchcodebench._completion import extract_code
from labcoat.families.researchcodebench._discover import FAMILY, discover
from labcoat.families.researchcodebench._failures import (
    Failure,
    FailureKind,
    UnittestSummary,
    classify_failure,
    exceptions_raised,
    parse_unittest_summary,
    run_passed,
    suspicious_access,
)
from labcoat.families.researchcodebench._papers import (
    PAPERS_YAML,
    TEST_SCRIPT,
    Paper,
    find_pset,
    load_papers,
)
from labcoat.families.researchcodebench._preflight import preflight
from labcoat.families.researchcodebench._snippets import (
    AnnotatedFile,
    Snippet,
    clean_source,
    count_code_lines,
    fill_snippet,
    insert_completion,
    is_marker,
    mask_snippet,
    parse_annotated,
    parse_annotated_file,
    reindent,
    strip_markers,
)
from labcoat.families.researchcodebench._spec import SPEC
from labcoat.families.researchcodebench._task import researchcodebench

__all__ = [
    "FAMILY",
    "PAPERS_YAML",
    "SPEC",
    "TEST_SCRIPT",
    "AnnotatedFile",
    "Failure",
    "FailureKind",
    "Paper",
    "Snippet",
    "SnippetResult",
    "UnittestSummary",
    "classify_failure",
    "clean_source",
    "count_code_lines",
    "discover",
    "exceptions_raised",
    "extract_code",
    "fill_snippet",
    "find_pset",
    "insert_completion",
    "is_marker",
    "load_papers",
    "mask_snippet",
    "parse_annotated",
    "parse_annotated_file",
    "parse_unittest_summary",
    "preflight",
    "published_scores",
    "read_overall_stats",
    "reindent",
    "researchcodebench",
    "run_passed",
    "strip_markers",
    "summarize",
    "summarize_by_model",
    "suspicious_access",
]

"""JudgeEval: how well a judge agrees with people, leaf by leaf.

Each case pairs a judge-graded tree with a human-graded tree of the same rubric. A leaf is a
binary example (1 = requirement met = the positive class). The figures follow upstream's
JudgeEval definition: leaves the judge failed to grade (`valid_score` false) are left out;
accuracy, and precision, recall and F1 of each class and their macro average over the classes
present in truth or prediction (scikit-learn's `average="macro"`, `zero_division=0`); per
case, per task category, and pooled over every leaf of every case. Because leaving failures
out flatters a judge that fails on the hard leaves, the report also gives the *strict*
figures, where a failed leaf counts as a wrong answer, and the number of failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labcoat._errors import LabcoatError
from labcoat.families.paperbench._files import FileView
from labcoat.families.paperbench._graded import GradedNode, load_graded_tree
from labcoat.families.paperbench._judge import Judge, JudgeInput, JudgeUsage, Reproduction
from labcoat.families.paperbench._paper import Paper
from labcoat.families.paperbench._rubric import code_dev, dotted_path

EXPECTED_RESULT = "expected_result.json"


@dataclass(frozen=True)
class ClassScores:
    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class Confusion:
    """Counts of one binary classification over the leaves the judge graded, plus the
    leaves it failed to grade, by their true class."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    failed_pos: int = 0
    failed_neg: int = 0

    def __add__(self, other: Confusion) -> Confusion:
        return Confusion(
            self.tp + other.tp,
            self.fp + other.fp,
            self.tn + other.tn,
            self.fn + other.fn,
            self.failed_pos + other.failed_pos,
            self.failed_neg + other.failed_neg,
        )

    @property
    def n(self) -> int:
        """Leaves compared (upstream's `num_samples`): graded by the judge and by people."""
        return self.tp + self.fp + self.tn + self.fn

    @property
    def failed(self) -> int:
        """Leaves the judge failed to grade (left out of the figures, as upstream does)."""
        return self.failed_pos + self.failed_neg

    @property
    def positives(self) -> int:
        """Compared leaves people graded as met (upstream's `num_positives`)."""
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        return self.tn + self.fp

    def strict(self) -> Confusion:
        """The same counts with every failed leaf counted as a wrong answer."""
        return Confusion(self.tp, self.fp + self.failed_neg, self.tn, self.fn + self.failed_pos)

    @property
    def accuracy(self) -> float:
        return _ratio(self.tp + self.tn, self.n)

    @property
    def met(self) -> ClassScores:
        """Precision, recall and F1 of class 1 (the requirement is met)."""
        return ClassScores(
            _ratio(self.tp, self.tp + self.fp),
            _ratio(self.tp, self.tp + self.fn),
            _f1(self.tp, self.fp, self.fn),
        )

    @property
    def not_met(self) -> ClassScores:
        """Precision, recall and F1 of class 0 (its true positives are our true negatives)."""
        return ClassScores(
            _ratio(self.tn, self.tn + self.fn),
            _ratio(self.tn, self.tn + self.fp),
            _f1(self.tn, self.fn, self.fp),
        )

    @property
    def precision(self) -> float:
        return self.met.precision

    @property
    def recall(self) -> float:
        return self.met.recall

    @property
    def f1(self) -> float:
        return self.met.f1

    def _classes(self) -> list[ClassScores]:
        """Scores of each class present in truth or prediction (scikit-learn's labels)."""
        out = []
        if self.tn + self.fn + self.fp:  # label 0 occurs (a true or a predicted 0)
            out.append(self.not_met)
        if self.tp + self.fp + self.fn:  # label 1 occurs
            out.append(self.met)
        return out

    def _macro(self, name: str) -> float:
        classes = self._classes()
        return sum(getattr(c, name) for c in classes) / len(classes) if classes else 0.0

    @property
    def macro_precision(self) -> float:
        return self._macro("precision")

    @property
    def macro_recall(self) -> float:
        return self._macro("recall")

    @property
    def macro_f1(self) -> float:
        return self._macro("f1")

    def to_json(self) -> dict[str, Any]:
        strict = self.strict()
        return {
            "leaves": self.n,
            "positives": self.positives,
            "negatives": self.negatives,
            "failed": self.failed,
            "tp": self.tp,
            "fp": self.fp,
            "tn": self.tn,
            "fn": self.fn,
            "accuracy": self.accuracy,
            "met": self.met.__dict__,
            "not_met": self.not_met.__dict__,
            "macro_precision": self.macro_precision,
            "macro_recall": self.macro_recall,
            "macro_f1": self.macro_f1,
            "strict": {
                "leaves": strict.n,
                "accuracy": strict.accuracy,
                "macro_precision": strict.macro_precision,
                "macro_recall": strict.macro_recall,
                "macro_f1": strict.macro_f1,
            },
        }


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def _f1(tp: int, fp: int, fn: int) -> float:
    return _ratio(2 * tp, 2 * tp + fp + fn)


@dataclass(frozen=True)
class JudgeEvalCase:
    """One paper attempt: the judge's graded tree, the people's, and what judging cost."""

    paper_id: str
    judged: GradedNode
    expected: GradedNode
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    attempt: str | None = None

    @property
    def name(self) -> str:
        """How reports label the case: `paper/attempt` (upstream's example id) or the paper."""
        return f"{self.paper_id}/{self.attempt}" if self.attempt is not None else self.paper_id


@dataclass(frozen=True)
class JudgeEvalReport:
    overall: Confusion
    by_category: dict[str, Confusion]
    by_paper: dict[str, Confusion]
    usage: JudgeUsage
    by_case: dict[str, Confusion] = field(default_factory=dict)
    skipped: int = 0  # leaves people left ungraded (valid_score false): no ground truth
    judge: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def calls_per_leaf(self) -> float:
        return _ratio(self.usage.calls, self.overall.n + self.overall.failed)

    @property
    def tokens_per_leaf(self) -> float:
        return _ratio(self.usage.tokens, self.overall.n + self.overall.failed)

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "overall": self.overall.to_json(),
            "by_category": {k: v.to_json() for k, v in self.by_category.items()},
            "by_paper": {k: v.to_json() for k, v in self.by_paper.items()},
            "by_case": {k: v.to_json() for k, v in self.by_case.items()},
            "skipped": self.skipped,
            "usage": self.usage.to_json(),
            "calls_per_leaf": self.calls_per_leaf,
            "tokens_per_leaf": self.tokens_per_leaf,
        }


def judge_eval(
    cases: Sequence[JudgeEvalCase], *, threshold: float = 0.5, judge: str = ""
) -> JudgeEvalReport:
    """Accuracy, per-class and macro precision, recall and F1 of judged leaves against people's.

    Leaves are matched by address (`RubricNode.origin`, else path), so a judged tree may be
    a reduction of the human one (e.g. Code-Dev); a matched leaf must carry the same id.
    (Upstream finds the human leaf by id, the first in the tree with it: the same leaf
    wherever ids are unique, as in every published JudgeEval tree.) A human leaf without a
    valid grade has no ground truth and is skipped.
    """
    overall = Confusion()
    by_category: dict[str, Confusion] = {}
    by_paper: dict[str, Confusion] = {}
    by_case: dict[str, Confusion] = {}
    usage = JudgeUsage()
    skipped = 0
    for case in cases:
        usage += case.usage
        paper = Confusion()
        truths = {n.address(p): n for p, n in case.expected.leaves()}
        for path, leaf in case.judged.leaves():
            address = leaf.address(path)
            truth_node = truths.get(address)
            if truth_node is None:
                raise LabcoatError(
                    f"{case.name}: judged leaf {dotted_path(address)} ({leaf.id}) is not a leaf "
                    "of the human tree"
                )
            if truth_node.id != leaf.id:
                raise LabcoatError(
                    f"{case.name}: judged leaf {dotted_path(address)} ({leaf.id}) does not "
                    f"match the human tree's leaf there ({truth_node.id})"
                )
            if not truth_node.valid_score:
                skipped += 1
                continue
            one = _classify(truth_node.score >= threshold, leaf, threshold)
            paper += one
            category = leaf.task_category or "(none)"
            by_category[category] = by_category.get(category, Confusion()) + one
        by_paper[case.paper_id] = by_paper.get(case.paper_id, Confusion()) + paper
        by_case[case.name] = by_case.get(case.name, Confusion()) + paper
        overall += paper
    return JudgeEvalReport(overall, by_category, by_paper, usage, by_case, skipped, judge)


def _classify(truth: bool, judged: GradedNode, threshold: float) -> Confusion:
    if not judged.valid_score:
        # left out of the figures (as upstream does), counted apart by its true class
        return Confusion(failed_pos=int(truth), failed_neg=int(not truth))
    pred = judged.score >= threshold
    return Confusion(
        tp=int(truth and pred),
        fp=int(pred and not truth),
        tn=int(not truth and not pred),
        fn=int(truth and not pred),
    )


# --- running a judge over human-graded trees --------------------------------------------------


def load_expected_results(root: str | Path) -> dict[str, GradedNode]:
    """`<root>/<paper id>/expected_result.json` for every paper id, by id."""
    root = Path(root)
    found = sorted(root.glob(f"*/{EXPECTED_RESULT}"))
    if not found:
        raise LabcoatError(f"{root}: no */{EXPECTED_RESULT} found")
    return {f.parent.name: load_graded_tree(f) for f in found}


@dataclass(frozen=True)
class JudgeEvalItem:
    """What the judge grades for one human-graded tree: the paper and the graded submission."""

    paper: Paper
    expected: GradedNode
    submission: FileView
    executed: FileView | None = None
    reproduction: Reproduction | None = None
    attempt: str | None = None
    paper_name: str | None = None
    """The paper's name in the JudgeEval data (its folder there), when not its config id."""


def judged_rubric(expected: GradedNode, code_dev_only: bool) -> GradedNode:
    """The human tree as the judge grades it: whole, or reduced as Code-Dev reduces it."""
    return code_dev(expected) if code_dev_only else expected


async def judge_case(
    judge: Judge, item: JudgeEvalItem, *, code_dev_only: bool = False
) -> JudgeEvalCase:
    """Grade one item's submission against the human tree's own rubric."""
    expected = judged_rubric(item.expected, code_dev_only)
    result = await judge.judge(
        JudgeInput(
            item.paper,
            expected.rubric(),
            item.submission,
            None if code_dev_only else item.executed,
            None if code_dev_only else item.reproduction,
            code_dev=code_dev_only,
        )
    )
    name = item.paper_name or item.paper.id
    return JudgeEvalCase(name, result.tree, expected, result.usage, item.attempt)


async def evaluate_judge(
    judge: Judge, items: Sequence[JudgeEvalItem], *, code_dev_only: bool = False
) -> JudgeEvalReport:
    """Grade each item's submission against the human tree's own rubric, then compare.

    With `code_dev_only`, both trees are reduced as PaperBench Code-Dev reduces a rubric.
    """
    cases = [await judge_case(judge, item, code_dev_only=code_dev_only) for item in items]
    return judge_eval(cases, judge=judge.name)

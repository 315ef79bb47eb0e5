"""The PaperBench rubric tree: an immutable model, a validating loader, transforms, statistics.

A rubric is a tree of requirements. Leaves carry a task category and are graded 0/1; an
internal node's score is the weight-averaged mean of its children's. Upstream ids are not
always unique, so nodes are addressed by their *path*: the child indices from the root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self, TypeVar

from labcoat._errors import TaskDataError
from labcoat._util.json_file import read_json as read_json_file
from labcoat._util.lfs import require_content

CODE_DEVELOPMENT = "Code Development"
CODE_EXECUTION = "Code Execution"
RESULT_ANALYSIS = "Result Analysis"
# The leaf categories of the native format, in the order reports list them.
TASK_CATEGORIES: tuple[str, ...] = (CODE_DEVELOPMENT, CODE_EXECUTION, RESULT_ANALYSIS)
# Upstream judges may grade a whole pruned subtree as one leaf; only graded trees carry it.
SUBTREE = "Subtree"

DATASET_AND_MODEL_ACQUISITION = "Dataset and Model Acquisition"
FINEGRAINED_CATEGORIES: tuple[str, ...] = (
    "Environment & Infrastructure Setup",
    DATASET_AND_MODEL_ACQUISITION,
    "Data Processing & Preparation",
    "Method Implementation",
    "Experimental Setup",
    "Evaluation, Metrics & Benchmarking",
    "Logging, Analysis & Presentation",
)

NodePath = tuple[int, ...]
"""Child indices from the root: () is the root, (2, 0) is `sub_tasks[2].sub_tasks[0]`."""


def format_path(path: NodePath) -> str:
    """`(2, 0)` -> `sub_tasks[2].sub_tasks[0]`, the way errors name a node; () -> `(root)`."""
    return ".".join(f"sub_tasks[{i}]" for i in path) or "(root)"


def dotted_path(path: NodePath) -> str:
    """`(2, 0)` -> `2.0`, the short form the sidecar and reports use; () -> ``."""
    return ".".join(str(i) for i in path)


def parse_dotted_path(text: str) -> NodePath:
    """Inverse of `dotted_path`; raises ValueError on anything but dot-separated indices."""
    text = text.strip()
    if not text:
        return ()
    parts = text.split(".")
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"not a tree path of dot-separated child indices: {text!r}")
    return tuple(int(p) for p in parts)


@dataclass(frozen=True, kw_only=True)
class RubricNode:
    """One requirement of a rubric; a leaf when it has no sub-tasks.

    `origin` is this node's path in the rubric as loaded. Transforms such as `code_only`
    keep it, so sidecar checks and human grades still find a leaf after the tree changed.
    """

    id: str
    requirements: str
    weight: int
    sub_tasks: tuple[Self, ...] = ()
    task_category: str | None = None
    finegrained_task_category: str | None = None
    origin: NodePath | None = field(default=None, compare=False)

    @property
    def is_leaf(self) -> bool:
        return not self.sub_tasks

    def walk(self, path: NodePath = ()) -> Iterator[tuple[NodePath, Self]]:
        """Every node with its path, depth-first, parents before children."""
        yield path, self
        for i, child in enumerate(self.sub_tasks):
            yield from child.walk((*path, i))

    def leaves(self) -> Iterator[tuple[NodePath, Self]]:
        return ((p, n) for p, n in self.walk() if n.is_leaf)

    def at(self, path: NodePath) -> Self:
        """The node at `path`; IndexError when the tree has no such node."""
        node = self
        for i in path:
            if not 0 <= i < len(node.sub_tasks):
                raise IndexError(f"no node at {format_path(path)}")
            node = node.sub_tasks[i]
        return node

    def address(self, path: NodePath) -> NodePath:
        """The path a sidecar or a human grade knows this node by: its origin, else `path`."""
        return self.origin if self.origin is not None else path

    def paths_of_id(self, node_id: str) -> list[NodePath]:
        """All paths whose node has `node_id` (more than one when upstream repeats an id)."""
        return [p for p, n in self.walk() if n.id == node_id]

    def to_dict(self) -> dict[str, Any]:
        """The native JSON shape (without labcoat's `origin`)."""
        return {
            "id": self.id,
            "requirements": self.requirements,
            "weight": self.weight,
            "sub_tasks": [c.to_dict() for c in self.sub_tasks],
            "task_category": self.task_category,
            "finegrained_task_category": self.finegrained_task_category,
        }

    def with_origins(self, path: NodePath = ()) -> Self:
        """A copy whose every node records its current path as its origin."""
        children = tuple(c.with_origins((*path, i)) for i, c in enumerate(self.sub_tasks))
        return replace(self, sub_tasks=children, origin=path)


# --- loading and validation ----------------------------------------------------------------


def load_rubric(file: str | Path) -> RubricNode:
    """Load and validate a `rubric.json`; bad data raises TaskDataError naming the tree path.

    A task's rubric must be able to score: a node whose sub-tasks all weigh 0 would score
    0 whatever the submission does (graded trees, which may be anything, are not held to
    this; see `parse_tree`)."""
    rubric = parse_rubric(read_json(file), file)
    _check_scorable(rubric, str(file))
    return rubric


def _check_scorable(node: RubricNode, file: str) -> None:
    if node.sub_tasks and not any(child.weight for child in node.sub_tasks):
        raise TaskDataError(
            file,
            node_field(node.origin or (), "sub_tasks"),
            "every sub-task has weight 0, so this node can never score",
        )
    for child in node.sub_tasks:
        _check_scorable(child, file)


def parse_rubric(data: Any, file: str | Path = "rubric.json") -> RubricNode:
    """Validate an already-parsed rubric; `file` is only used in error messages."""
    return parse_tree(data, file, RubricNode, None)


N = TypeVar("N", bound=RubricNode)
# Validates the fields a subclass adds (e.g. a grade) and returns them as keyword arguments.
ExtraFields = Callable[[dict[str, Any], str, NodePath], dict[str, Any]]


def parse_tree(data: Any, file: str | Path, cls: type[N], extra: ExtraFields | None) -> N:
    """Validate a native tree into `cls` nodes; `extra` checks the fields `cls` adds."""
    return _parse_node(data, str(file), (), cls, extra)


def read_json(file: str | Path) -> Any:
    path = Path(file)
    require_content([path])  # a Git LFS pointer is not JSON: say what it is
    return read_json_file(path)


def node_field(path: NodePath, name: str) -> str:
    """How an error names field `name` of the node at `path`."""
    return f"{format_path(path)}.{name}" if path else name


def _parse_node(data: Any, file: str, path: NodePath, cls: type[N], extra: ExtraFields | None) -> N:
    graded = extra is not None
    where = format_path(path) if path else None
    if not isinstance(data, dict):
        raise TaskDataError(file, where, f"must be an object, got {type(data).__name__}")

    def need(name: str) -> Any:
        if name not in data:
            raise TaskDataError(file, node_field(path, name), "missing")
        return data[name]

    node_id = need("id")
    if not isinstance(node_id, str) or not node_id:
        raise TaskDataError(
            file, node_field(path, "id"), f"must be a non-empty string, got {node_id!r}"
        )
    requirements = need("requirements")
    if not isinstance(requirements, str):
        raise TaskDataError(
            file, node_field(path, "requirements"), f"must be a string, got {requirements!r}"
        )
    weight = need("weight")
    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
        raise TaskDataError(
            file, node_field(path, "weight"), f"must be a non-negative integer, got {weight!r}"
        )
    raw_children = need("sub_tasks")
    if not isinstance(raw_children, list):
        raise TaskDataError(
            file,
            node_field(path, "sub_tasks"),
            f"must be a list, got {type(raw_children).__name__}",
        )
    children = tuple(
        _parse_node(c, file, (*path, i), cls, extra) for i, c in enumerate(raw_children)
    )

    category = data.get("task_category")
    if children:
        if category is not None:
            raise TaskDataError(
                file,
                node_field(path, "task_category"),
                f"must be null on a node with sub-tasks, got {category!r}",
            )
    else:
        allowed = (*TASK_CATEGORIES, SUBTREE) if graded else TASK_CATEGORIES
        if category not in allowed:
            raise TaskDataError(
                file,
                node_field(path, "task_category"),
                f"a leaf must have one of {', '.join(allowed)}; got {category!r}",
            )
    # Graded upstream trees omit this key; internal nodes normally carry null.
    finegrained = data.get("finegrained_task_category")
    if finegrained is not None and finegrained not in FINEGRAINED_CATEGORIES:
        raise TaskDataError(
            file,
            node_field(path, "finegrained_task_category"),
            f"must be null or one of {', '.join(FINEGRAINED_CATEGORIES)}; got {finegrained!r}",
        )

    common: dict[str, Any] = dict(
        id=node_id,
        requirements=requirements,
        weight=weight,
        sub_tasks=children,
        task_category=category,
        finegrained_task_category=finegrained,
        origin=path,
    )
    if extra is not None:
        common.update(extra(data, file, path))
    return cls(**common)


# --- transforms ------------------------------------------------------------------------------


def code_only(node: N) -> N | None:
    """Code-Dev: keep only Code Development leaves; drop internal nodes left empty.

    Returns None when nothing is left (a rubric with no Code Development leaf).
    """
    if node.is_leaf:
        return node if node.task_category == CODE_DEVELOPMENT else None
    kept = tuple(c for c in (code_only(child) for child in node.sub_tasks) if c is not None)
    return replace(node, sub_tasks=kept) if kept else None


def code_dev(node: N) -> N:
    """The rubric PaperBench Code-Dev grades: `code_only`, or, when no Code Development leaf
    is left, the root alone as one Code Development leaf (as upstream does)."""
    reduced = code_only(node)
    if reduced is not None:
        return reduced
    return replace(node, sub_tasks=(), task_category=CODE_DEVELOPMENT)


def resources_provided(node: N) -> N:
    """Zero the weight of every 'Dataset and Model Acquisition' leaf (resources given upfront)."""
    if node.is_leaf:
        if node.finegrained_task_category == DATASET_AND_MODEL_ACQUISITION:
            return replace(node, weight=0)
        return node
    return replace(node, sub_tasks=tuple(resources_provided(c) for c in node.sub_tasks))


# --- statistics ------------------------------------------------------------------------------

NO_FINEGRAINED = "(none)"


@dataclass(frozen=True)
class RubricStats:
    """Counts over one rubric (or a sum of rubrics, see `combine`)."""

    nodes: int
    leaves: int
    depth: int  # edges from the root to the deepest leaf; a lone root has depth 0
    leaves_by_category: dict[str, int]
    leaves_by_finegrained: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "leaves": self.leaves,
            "depth": self.depth,
            "leaves_by_category": dict(self.leaves_by_category),
            "leaves_by_finegrained_category": dict(self.leaves_by_finegrained),
        }

    @staticmethod
    def combine(stats: list[RubricStats]) -> RubricStats:
        """Totals over several rubrics; depth is the deepest of them."""
        by_cat = dict.fromkeys(TASK_CATEGORIES, 0)
        by_fine: dict[str, int] = {}
        for s in stats:
            for k, v in s.leaves_by_category.items():
                by_cat[k] = by_cat.get(k, 0) + v
            for k, v in s.leaves_by_finegrained.items():
                by_fine[k] = by_fine.get(k, 0) + v
        return RubricStats(
            nodes=sum(s.nodes for s in stats),
            leaves=sum(s.leaves for s in stats),
            depth=max((s.depth for s in stats), default=0),
            leaves_by_category=by_cat,
            leaves_by_finegrained=_ordered_finegrained(by_fine),
        )


EMPTY_STATS = RubricStats(0, 0, 0, dict.fromkeys(TASK_CATEGORIES, 0), {})


def rubric_stats(root: RubricNode | None) -> RubricStats:
    """Node and leaf counts, leaves by category and finegrained category, depth."""
    if root is None:
        return EMPTY_STATS
    nodes = leaves = depth = 0
    by_cat = dict.fromkeys(TASK_CATEGORIES, 0)
    by_fine: dict[str, int] = {}
    for path, node in root.walk():
        nodes += 1
        if node.is_leaf:
            leaves += 1
            depth = max(depth, len(path))
            cat = node.task_category or NO_FINEGRAINED
            by_cat[cat] = by_cat.get(cat, 0) + 1
            fine = node.finegrained_task_category or NO_FINEGRAINED
            by_fine[fine] = by_fine.get(fine, 0) + 1
    return RubricStats(nodes, leaves, depth, by_cat, _ordered_finegrained(by_fine))


def _ordered_finegrained(counts: dict[str, int]) -> dict[str, int]:
    order = {name: i for i, name in enumerate((*FINEGRAINED_CATEGORIES, NO_FINEGRAINED))}
    return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

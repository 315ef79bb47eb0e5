"""labcoat's imports run one way: no circle among its modules, and inside `sandbox/` no
module imports one from a higher layer (the layers are listed once, in
`labcoat/sandbox/__init__.py`'s docstring).

The graph is grimp's (what import-linter uses): every import statement counts, those
inside functions and under `TYPE_CHECKING` included, since a late import that dodges a
circle at run time is still the circle.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import grimp
import pytest

import labcoat.sandbox

SRC = Path(labcoat.__file__).resolve().parents[1]
SANDBOX = "labcoat.sandbox"
MAX_SANDBOX_MODULE_LINES = 500


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("labcoat", cache_dir=None)


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (the circles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for node in sorted(edges):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def import_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    modules = set(graph.modules)
    return {m: set(graph.find_modules_directly_imported_by(m)) & modules for m in modules}


def sandbox_layers() -> list[list[str]]:
    """The layers of `labcoat.sandbox`'s docstring, top first, as module names."""
    doc = labcoat.sandbox.__doc__ or ""
    layers: list[list[str]] = []
    for line in doc.splitlines():
        match = re.fullmatch(r" {4}([a-z]+) +(_\w+(?: _\w+)*)", line)
        if match:
            layers.append(match.group(2).split())
        elif re.fullmatch(r" {5,}(_\w+(?: _\w+)*)", line) and layers:
            layers[-1] += line.split()  # a layer's list continued on the next line
    return [[f"{SANDBOX}.{name}" for name in layer] for layer in layers]


def test_circles_are_found() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert strongly_connected(edges) == [["a", "b", "c"]]


def test_no_import_circle_in_labcoat(graph: grimp.ImportGraph) -> None:
    circles = strongly_connected(import_edges(graph))
    assert not circles, "modules that import each other, directly or through others:\n" + (
        "\n".join(", ".join(circle) for circle in circles)
    )


def test_every_sandbox_module_has_a_layer(graph: grimp.ImportGraph) -> None:
    layers = sandbox_layers()
    assert len(layers) >= 6, "the layer list in labcoat/sandbox/__init__.py was not found"
    listed = [module for layer in layers for module in layer]
    assert len(listed) == len(set(listed)), "a module is listed in two layers"
    modules = {m for m in graph.find_children(SANDBOX)}
    assert set(listed) == modules, (
        f"not in a layer: {sorted(modules - set(listed))}; "
        f"listed but missing: {sorted(set(listed) - modules)}"
    )


def test_sandbox_imports_run_downward(graph: grimp.ImportGraph) -> None:
    layers = sandbox_layers()
    level = {module: len(layers) - i for i, layer in enumerate(layers) for module in layer}
    upward = []
    for module, rank in level.items():
        for imported in graph.find_modules_directly_imported_by(module):
            if level.get(imported, 0) > rank:
                details = graph.get_import_details(importer=module, imported=imported)
                lines = ", ".join(str(d["line_number"]) for d in details)
                upward.append(f"{module} (line {lines}) imports {imported}, a higher layer")
    assert not upward, "\n".join(upward)


def test_sandbox_package_imports_nothing_above_sandbox(graph: grimp.ImportGraph) -> None:
    """The sandbox sits under families, agents, grading and runs: it may use integrity's
    vocabulary and the shared errors ("cannot run here" among them), nothing that builds
    on it."""
    allowed = ("labcoat.sandbox", "labcoat.integrity", "labcoat._errors", "labcoat._unavailable")
    allowed += ("labcoat._util",)
    outside = sorted(
        f"{module} imports {imported}"
        for module in graph.find_descendants(SANDBOX)
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("labcoat") and not imported.startswith(allowed)
    )
    assert not outside, "\n".join(outside)


def test_integrity_imports_no_family(graph: grimp.ImportGraph) -> None:
    upward = sorted(
        f"{module} imports {imported}"
        for module in graph.find_descendants("labcoat.integrity")
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("labcoat.families")
    )
    assert not upward, "\n".join(upward)


def test_no_sandbox_module_over_500_lines() -> None:
    folder = SRC / "labcoat" / "sandbox"
    long = {
        path.name: n
        for path in sorted(folder.glob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_SANDBOX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_SANDBOX_MODULE_LINES} lines: {long}"

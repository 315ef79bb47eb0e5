"""labcoat's imports run one way: no circle among its modules or its packages, no package
imports one from a higher layer (the layers are listed once, in `labcoat/__init__.py`'s
docstring), and inside `sandbox/` no module imports one from a higher layer (listed in
`labcoat/sandbox/__init__.py`'s docstring). No exceptions: a lazy import that keeps the
CLI fast may stay lazy, it may not run up the layers.

Every import statement counts, those inside functions and under `TYPE_CHECKING`
included, since a late import that dodges a circle at run time is still the circle. The
module graph is grimp's (what import-linter uses); the package layers are checked on an
AST walk of every source file of our own (`ast.walk`, every node, not only the module's
top level), so they do not rest on what grimp chooses to see.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import grimp
import pytest

import labcoat.sandbox

SRC = Path(labcoat.__file__).resolve().parents[1]
SANDBOX = "labcoat.sandbox"
ROOT_MODULE = "__init__"
"""The name `labcoat/__init__.py`'s layer list gives the top-level module itself."""
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


# --- packages ------------------------------------------------------------------------


def package_layers() -> list[list[str]]:
    """The layers of `labcoat`'s docstring, top first, as top-level names (`_cli`)."""
    doc = labcoat.__doc__ or ""
    return [
        match.group(2).split()
        for line in doc.splitlines()
        if (match := re.fullmatch(r" {4}([a-z]+) +(\w+(?: \w+)*)", line))
    ]


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) of every import in `source`, wherever it stands (a function's body,
    an `if TYPE_CHECKING:` block), relative ones resolved against `module`."""
    found: list[tuple[int, str]] = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found.append((node.lineno, base))
            # `from labcoat import analysis`: the name may be a package of its own
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def top_level(module: str) -> str | None:
    """The top-level package or module of labcoat that `module` is in (`_cli`), or
    ROOT_MODULE for `labcoat` itself; None outside labcoat."""
    parts = module.split(".")
    if parts[0] != "labcoat":
        return None
    return parts[1] if len(parts) > 1 else ROOT_MODULE


def package_imports(root: Path) -> list[tuple[str, int, str, str]]:
    """(file, line, importer's top level, imported top level) of every import between
    two of labcoat's top-level parts, from every source file under `root` (labcoat/)."""
    out = []
    known = {p.stem for p in root.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parts[:-1] if is_package else rel.parts)
        importer = top_level(module)
        for line, name in imported_modules(path.read_text(), module, is_package):
            imported = top_level(name)
            if imported is None or imported == importer:
                continue
            if imported != ROOT_MODULE and imported not in known:
                continue  # `from labcoat import LabcoatError`: a name, not a module
            out.append((str(path.relative_to(root.parent)), line, importer, imported))
    return out


def test_imports_inside_functions_are_counted() -> None:
    source = (
        "import typing\n"
        "if typing.TYPE_CHECKING:\n    from labcoat.report import x\n"
        "def f():\n    from labcoat.analysis._data import RunData\n"
        "    from ..regrade import y\n"
    )
    found = {name for _, name in imported_modules(source, "labcoat.families._m", False)}
    assert {"labcoat.report", "labcoat.analysis._data", "labcoat.regrade"} <= found


def test_every_package_has_a_layer() -> None:
    layers = package_layers()
    listed = [name for layer in layers for name in layer]
    assert len(layers) >= 5, "the layer list in labcoat/__init__.py was not found"
    assert len(listed) == len(set(listed)), "a package is listed in two layers"
    root = SRC / "labcoat"
    present = {p.stem for p in root.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert set(listed) == present, (
        f"not in a layer: {sorted(present - set(listed))}; "
        f"listed but missing: {sorted(set(listed) - present)}"
    )


def test_packages_import_downward() -> None:
    """No exceptions: every import up the layers is a fault to fix, not to list."""
    layers = package_layers()
    level = {name: len(layers) - i for i, layer in enumerate(layers) for name in layer}
    upward = sorted(
        f"{file}:{line}: {importer} imports {imported}, a higher layer"
        for file, line, importer, imported in package_imports(SRC / "labcoat")
        if level[imported] > level[importer]
    )
    assert not upward, "\n".join(upward)


def test_no_import_circle_among_packages() -> None:
    edges: dict[str, set[str]] = {name: set() for layer in package_layers() for name in layer}
    where: dict[tuple[str, str], str] = {}
    for file, line, importer, imported in package_imports(SRC / "labcoat"):
        edges[importer].add(imported)
        where.setdefault((importer, imported), f"{file}:{line}")
    circles = strongly_connected(edges)
    described = [
        " -> ".join(circle)
        + " ("
        + ", ".join(f"{where[(a, b)]}" for a in circle for b in circle if (a, b) in where)
        + ")"
        for circle in circles
    ]
    assert not circles, "packages that import each other:\n" + "\n".join(described)

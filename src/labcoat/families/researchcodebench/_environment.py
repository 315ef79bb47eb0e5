"""What a paper's Python environment is made of, and which modules its tests need.

A paper's environment is, in order:

- the repository's conda `environment.yml` (upstream's one environment for all papers),
  found next to `papers.yaml` or in the folder above it (the checkout's root);
- the pset's `requirements.txt` next to `papers.yaml` (a labcoat convention);
- the task's `requirements` parameter;
- the paper's own `requirements.txt`, only when no environment.yml defines the
  environment: upstream installs environment.yml alone and never a paper's own file
  (GMFlow's names `git+` sources), so with one the paper's file is ignored and noted.

labcoat builds one cached, read-only environment per distinct set (`labcoat.sandbox`
does the building); the interpreter is the harness's own Python.

Before grading, the modules that the test script imports (following its imports through
the paper's own files, at module level, outside `try: ... except ImportError`) are looked
up inside the grading sandbox; any not found is reported by name with the file that
imports it, instead of failing every snippet with the same ImportError.
"""

from __future__ import annotations

import ast
import threading
from pathlib import Path

from labcoat._errors import LabcoatError
from labcoat.families.researchcodebench._conda import (
    CondaEnvironment,
    find_conda_file,
    read_conda_environment,
)
from labcoat.families.researchcodebench._papers import PAPERS_YAML, Paper
from labcoat.sandbox import PythonEnv, read_requirements_file, specifiers

REQUIREMENTS_FILE = "requirements.txt"
_PARSE_LOCK = threading.Lock()
_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}

# run in the sandbox with candidate top-level module names as arguments
PROBE_SCRIPT = """\
import importlib.util, json, sys
missing = []
for name in sys.argv[1:]:
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        missing.append(name)
print(json.dumps(missing))
"""


class MissingModulesError(LabcoatError):
    """A paper's tests import modules that its Python environment does not have."""

    def __init__(self, message: str, missing: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.missing = missing or {}
        """module -> the paper file that imports it"""


def pset_conda(pset: Path) -> CondaEnvironment | None:
    """The repository's environment.yml (next to papers.yaml, or one folder up)."""
    path = find_conda_file([pset, pset.parent])
    return read_conda_environment(path) if path is not None else None


def pset_environment(
    pset: Path, requirements: str | list[str] | None = None
) -> tuple[PythonEnv, tuple[str, ...]]:
    """What every paper of the pset needs, and notes on how conda lines were mapped:
    environment.yml, then the pset's requirements.txt, then `requirements` (a file or
    a list of specifiers)."""
    conda = pset_conda(pset)
    env, notes = (conda.env, conda.notes) if conda is not None else (PythonEnv(), ())
    if conda is not None:
        date = latest_paper_date(pset)
        if date is not None:
            env = env.model_copy(update={"uploaded_prior_to": f"{date}T23:59:59Z"})
            notes = (
                *notes,
                f"resolved as of {date}, the latest date in papers.yaml: releases uploaded "
                "later are not considered (on indexes that record upload times)",
            )
    own = pset / REQUIREMENTS_FILE
    if own.is_file():
        env = env.plus(read_requirements_file(own))
    if requirements is None:
        return env, notes
    if isinstance(requirements, str):
        path = Path(requirements).expanduser()
        if not path.is_file():
            raise LabcoatError(
                f"requirements={requirements!r}: no such file (give a requirements file, "
                "or a list of requirement specifiers)"
            )
        return env.plus(read_requirements_file(path)), notes
    return env.plus(specifiers(*(str(r) for r in requirements))), notes


def latest_paper_date(pset: Path) -> str | None:
    """The latest date (YYYY-MM-DD) that papers.yaml names: when the pset was assembled,
    at the earliest, and so about when upstream's environment was created."""
    import re

    text = (pset / PAPERS_YAML).read_text(encoding="utf-8", errors="replace")
    dates = re.findall(r"_date:\s*['\"]?(\d{4}-\d{2}-\d{2})", text)
    return max(dates) if dates else None


def paper_environment(
    paper: Paper, base: PythonEnv | None = None, *, own_requirements: bool = True
) -> PythonEnv:
    """`base` then the paper's own requirements.txt (unless `own_requirements` is off:
    an environment.yml defines the environment), without duplicates, in order."""
    own_file = paper.folder / REQUIREMENTS_FILE
    own = (
        read_requirements_file(own_file) if own_requirements and own_file.is_file() else PythonEnv()
    )
    return (base or PythonEnv()).plus(own)


def ignored_requirements(paper: Paper) -> str | None:
    """The note for a paper whose own requirements.txt is not installed (conda pset)."""
    if not (paper.folder / REQUIREMENTS_FILE).is_file():
        return None
    return (
        f"{paper.id}/{REQUIREMENTS_FILE} not installed: the repository's environment.yml "
        "defines the environment (upstream never installs a paper's own file)"
    )


def required_modules(paper: Paper) -> dict[str, str]:
    """Top-level modules the test script needs from outside the paper folder.

    Maps each module name to the paper file that first imports it. Follows imports of
    the paper's own modules; skips imports inside functions, under `if TYPE_CHECKING`
    and in `try` blocks that catch ImportError. Names that match a file or folder of the
    paper are taken as local even when the import cannot be resolved statically.
    """
    folder = paper.folder
    local_names = {p.stem for p in folder.rglob("*.py")} | {
        p.name for p in folder.rglob("*") if p.is_dir()
    }
    found: dict[str, str] = {}
    queue = [folder / paper.test_script]
    seen: set[Path] = set()
    while queue:
        file = queue.pop()
        if file in seen or not file.is_file():
            continue
        seen.add(file)
        try:
            source = file.read_text(encoding="utf-8", errors="replace")
            with _PARSE_LOCK:  # CPython 3.11's ast.parse is not safe in parallel threads
                tree = ast.parse(source)
        except SyntaxError:
            continue
        package = file.parent.relative_to(folder).parts
        for module, level in _module_level_imports(tree):
            local = _local_files(folder, package, module, level)
            if local:
                queue.extend(local)
                continue
            top = module.split(".")[0]
            if level or not top or top == "__future__" or top in local_names:
                continue
            found.setdefault(top, str(file.relative_to(folder)))
    return found


def _module_level_imports(tree: ast.Module) -> list[tuple[str, int]]:
    """(module, relative level) of the imports that run when the module is imported.

    `from pkg import name` also yields `pkg.name`, which is a module when it resolves
    to a file.
    """
    out: list[tuple[str, int]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                out.extend((alias.name, 0) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                out.append((base, node.level))
                for alias in node.names:
                    if alias.name != "*":
                        out.append((f"{base}.{alias.name}" if base else alias.name, node.level))
            elif isinstance(node, ast.Try | ast.TryStar):
                if not _catches_import_error(node):
                    visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.With | ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    return out


def _catches_import_error(node: ast.Try | ast.TryStar) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(n, ast.Name) and n.id in _GUARDS for n in names):
            return True
    return False


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _local_files(folder: Path, package: tuple[str, ...], module: str, level: int) -> list[Path]:
    """Files of the paper that importing `module` runs, or [] when it is not the paper's.

    Absolute imports resolve from the paper folder (the test script's directory, first
    on sys.path); relative ones from the importing file's package.
    """
    if level:
        base = package[: len(package) - (level - 1)] if level - 1 <= len(package) else ()
        parts = [*base, *[p for p in module.split(".") if p]]
    else:
        parts = [p for p in module.split(".") if p]
    if not parts:
        return []
    files: list[Path] = []
    current = folder
    for i, part in enumerate(parts):
        as_dir, as_file = current / part, current / f"{part}.py"
        if as_dir.is_dir():
            init = as_dir / "__init__.py"
            if init.is_file():
                files.append(init)
            current = as_dir
        elif as_file.is_file():
            files.append(as_file)
            return files  # what follows names attributes of that module
        else:
            return files if i > 0 else []  # `from pkg import attr`: pkg is still local
    return files


def missing_message(paper: Paper, missing: dict[str, str], environment: PythonEnv) -> str:
    names = ", ".join(f"{name} (imported by {where})" for name, where in sorted(missing.items()))
    env = environment.describe()
    return (
        f"paper {paper.id}: its tests import modules that its Python environment ({env}) "
        f"lacks: {names}. Add them to {paper.folder.name}/{REQUIREMENTS_FILE} in the pset, "
        "or give every paper a requirements file with -T requirements=FILE"
    )

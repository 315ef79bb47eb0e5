"""The test script's own tests, read from its text outside the test process, and the check
of a run's report against them.

The test process runs the completion, so its report is only as good as that process is
intact (see `_test_main.py`). What the report must say is decided here, by labcoat: the
test methods of the script's `unittest.TestCase` classes (inherited ones included when
their classes are the script's), each of which must have run and succeeded. A test the
script itself may skip (a skip decorator, `skipTest`) may end skipped; any other skip,
expected failure or missing test fails the run, and a report that claims a pass the
script's tests contradict (fewer tests, other names, no per-test outcomes) is flagged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TEST_CASES = {"TestCase", "IsolatedAsyncioTestCase"}
_SKIPS = {"skip", "skipIf", "skipUnless", "expectedFailure", "skipTest", "SkipTest"}
_MAY_SKIP = {"skip", "expected_failure"}  # outcomes a test the script may skip may have
# unittest.main's arguments that do not change which tests run
_PLAIN_MAIN = {"verbosity", "exit", "buffer", "failfast", "catchbreak", "warnings", "tb_locals"}


@dataclass(frozen=True)
class ScriptTests:
    ids: frozenset[str]
    """`__main__.Class.test_name` of every test `unittest.main()` runs."""
    may_skip: frozenset[str] = frozenset()
    """Tests the script itself may skip or expect to fail."""
    complete: bool = True
    """False when the script picks its tests itself (a suite, `load_tests`, `defaultTest`)
    or a test class has a base from outside the script: then `ids` is what is known."""


def script_tests(path: Path) -> ScriptTests | None:
    """The tests of a test script; None when it does not parse (it fails on its own)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    aliases = _unittest_aliases(tree)
    classes: dict[str, ast.ClassDef] = {}
    for node in _module_level(tree.body):
        if isinstance(node, ast.ClassDef):
            classes[node.name] = node  # a later class of the same name wins, as at run time
    complete = _runs_every_test(tree, aliases)
    ids, may_skip = set(), set()
    for cls in classes.values():
        kind = _test_case(cls, classes, aliases, set())
        if kind is None and _own_tests(cls):
            complete = False  # a base from elsewhere: maybe a TestCase (a mock's is not)
        if not kind:
            continue
        names, skippable, known = _methods(cls, classes, aliases, set())
        complete = complete and known
        skip_class = _skips(cls.decorator_list, aliases)
        for name in names:
            test_id = f"__main__.{cls.name}.{name}"
            ids.add(test_id)
            if skip_class or name in skippable:
                may_skip.add(test_id)
    return ScriptTests(frozenset(ids), frozenset(may_skip), complete)


def check_report(report: dict[str, Any], expected: ScriptTests | None) -> tuple[str, ...]:
    """Why a report that claims a pass is not one: () when its tests are the script's,
    each run and succeeded (or skipped where the script may skip it)."""
    outcomes = report.get("outcomes")
    if not isinstance(outcomes, dict) or not all(
        isinstance(k, str) and isinstance(v, list) for k, v in outcomes.items()
    ):
        return ("the test report lists no outcome per test",)
    problems = []
    if report.get("ran") != len(outcomes) or report.get("tests") != len(outcomes):
        problems.append("the test report's counts differ from its own list of tests")
    if expected is not None:
        unknown = sorted(set(outcomes) - expected.ids)
        missing = sorted(expected.ids - set(outcomes)) if expected.complete else []
        if missing:
            problems.append(
                f"the test report lists {len(outcomes)} of the script's {len(expected.ids)} "
                f"tests (missing {', '.join(missing[:5])})"
            )
        if unknown and expected.complete:
            problems.append(f"the test report names tests the script does not have: {unknown[:5]}")
    may_skip = expected.may_skip if expected is not None else frozenset()
    for test_id, kinds in sorted(outcomes.items()):
        ends = set(kinds) - {"start"}
        if "start" not in kinds or not ends:
            problems.append(f"{test_id} did not run to an outcome")
        elif ends != {"success"} and not (ends <= _MAY_SKIP and test_id in may_skip):
            what = "/".join(sorted(ends))
            problems.append(f"{test_id} ended as {what}, which the script does not allow")
    return tuple(problems)


def _own_tests(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
        for n in cls.body
    )


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements run at module level, inside `if`/`try` blocks too."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If | ast.Try):
            for block in (node.body, node.orelse, getattr(node, "finalbody", [])):
                out += _module_level(block)
    return out


def _unittest_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it is in unittest: `unittest` for the module, else the name."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("unittest", "unittest.case"):
                    aliases[a.asname or a.name.split(".")[0]] = "unittest"
        elif isinstance(node, ast.ImportFrom) and node.module in ("unittest", "unittest.case"):
            for a in node.names:
                aliases[a.asname or a.name] = a.name
    return aliases


def _unittest_name(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """`unittest.TestCase`, `unittest.case.TestCase`, `TestCase` (imported): 'TestCase'."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        found = aliases.get(node.id)
        return found if found != "unittest" else None
    if isinstance(node, ast.Attribute):
        root = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and aliases.get(root.id) == "unittest":
            return node.attr
    return None


def _test_case(
    cls: ast.ClassDef, classes: dict[str, ast.ClassDef], aliases: dict[str, str], seen: set[str]
) -> bool | None:
    """True: a TestCase; False: not one; None: a base cannot be resolved in the script."""
    unknown = False
    for base in cls.bases:
        if _unittest_name(base, aliases) in _TEST_CASES:
            return True
        if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
            found = _test_case(classes[base.id], classes, aliases, seen | {cls.name})
            if found:
                return True
            unknown = unknown or found is None
        elif not (isinstance(base, ast.Name) and base.id == "object"):
            unknown = True
    return None if unknown else False


def _methods(
    cls: ast.ClassDef, classes: dict[str, ast.ClassDef], aliases: dict[str, str], seen: set[str]
) -> tuple[set[str], set[str], bool]:
    """(test method names, those the script may skip, whether all are known)."""
    names, skippable, known = set(), set(), True
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
            more, skip, ok = _methods(classes[base.id], classes, aliases, seen | {cls.name})
            names |= more
            skippable |= skip
            known = known and ok
        elif _unittest_name(base, aliases) not in _TEST_CASES and not (
            isinstance(base, ast.Name) and base.id == "object"
        ):
            known = False  # a mixin from elsewhere may bring tests
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("test"):
                names.add(node.name)
                if _skips(node.decorator_list, aliases) or _skips([node], aliases):
                    skippable.add(node.name)
                else:
                    skippable.discard(node.name)  # overridden without its skip
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.startswith("test") for t in targets):
                known = False  # `test_x = helper`: callable or not, unknown here
    return names, skippable, known


def _skips(nodes: list[Any], aliases: dict[str, str]) -> bool:
    """Whether decorators (or a test's body) skip or expect a failure."""
    for node in nodes:
        for sub in ast.walk(node):
            name = None
            if isinstance(sub, ast.Attribute):
                name = sub.attr
            elif isinstance(sub, ast.Name):
                name = aliases.get(sub.id, sub.id)
            if name in _SKIPS:
                return True
    return False


def _runs_every_test(tree: ast.Module, aliases: dict[str, str]) -> bool:
    """Whether the script runs its tests with a plain `unittest.main()`."""
    mains = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "load_tests":
            return False
        if isinstance(node, ast.Call) and _unittest_name(node.func, aliases) == "main":
            mains.append(node)
    return (
        len(mains) == 1
        and not mains[0].args
        and all(k.arg in _PLAIN_MAIN for k in mains[0].keywords)
    )

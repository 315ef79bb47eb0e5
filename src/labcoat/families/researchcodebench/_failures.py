"""Read a `paper2code_test.py` run: did it pass, and if not, what kind of failure was it.

Upstream decides a pass by exit code 0 and no "Error:", "Exception:", "Traceback" or
"failed" anywhere in the output, and sorts failures by asking an LLM. Here a pass needs
exit code 0 and unittest's own closing summary (`Ran N tests` with N > 0, then `OK`),
and failures are sorted by rules on the traceback and unittest report.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from enum import StrEnum

_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s\s*$")
_RESULT = re.compile(r"^(OK|FAILED)(?: \((.*)\))?\s*$")
_TB_START = re.compile(r"^Traceback \(most recent call last\):\s*$")
_TB_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_EXC_LINE = re.compile(r"^(?P<qual>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")
_UNITTEST_HEAD = re.compile(r"^(FAIL|ERROR): \S+")
_SHAPE_WORDS = re.compile(
    r"shape|broadcast|dimension|dimensions|size of tensor|must match the size|aligned|"
    r"cannot reshape|matmul|mismatch in its core dimension",
    re.IGNORECASE,
)
TIMEOUT_EXIT_CODES = (124,)  # `timeout` exits 124 when it stops the command


class FailureKind(StrEnum):
    """Why a completion's test run failed."""

    SYNTAX = "syntax"  # SyntaxError, IndentationError, TabError
    NAME_IMPORT = "name_import"  # NameError, UnboundLocalError, ImportError
    ATTRIBUTE = "attribute"  # AttributeError
    TYPE_SHAPE = "type_shape"  # TypeError; ValueError/RuntimeError about shapes
    INDEX_KEY = "index_key"  # IndexError, KeyError
    WRONG_RESULT = "wrong_result"  # assertions failed, nothing raised otherwise
    TIMEOUT = "timeout"  # its CPU-time or wall-clock limit stopped it
    CRASH = "crash"  # any other exception, a signal, or no report
    INTEGRITY = "integrity"  # the completion broke the grading rules at run time


# most fundamental first: a NameError in one test explains assertion failures elsewhere
_PRIORITY = (
    FailureKind.INTEGRITY,
    FailureKind.SYNTAX,
    FailureKind.NAME_IMPORT,
    FailureKind.ATTRIBUTE,
    FailureKind.TYPE_SHAPE,
    FailureKind.INDEX_KEY,
    FailureKind.CRASH,
    FailureKind.WRONG_RESULT,
)
_BY_EXCEPTION = {
    "SyntaxError": FailureKind.SYNTAX,
    "IndentationError": FailureKind.SYNTAX,
    "TabError": FailureKind.SYNTAX,
    "NameError": FailureKind.NAME_IMPORT,
    "UnboundLocalError": FailureKind.NAME_IMPORT,
    "ImportError": FailureKind.NAME_IMPORT,
    "ModuleNotFoundError": FailureKind.NAME_IMPORT,
    "AttributeError": FailureKind.ATTRIBUTE,
    "TypeError": FailureKind.TYPE_SHAPE,
    "IndexError": FailureKind.INDEX_KEY,
    "KeyError": FailureKind.INDEX_KEY,
    "AssertionError": FailureKind.WRONG_RESULT,
}


@dataclass(frozen=True)
class UnittestSummary:
    """unittest's closing lines: `Ran N tests in Ts` then `OK` or `FAILED (...)`."""

    ran: int
    ok: bool
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    expected_failures: int = 0
    unexpected_successes: int = 0


@dataclass(frozen=True)
class Failure:
    """A failed run's kind, the exception that decided it (if any) and its message."""

    kind: FailureKind
    exception: str | None = None
    message: str | None = None


def parse_unittest_summary(output: str) -> UnittestSummary | None:
    """The last unittest summary in `output`, or None when there is none."""
    lines = output.splitlines()
    found: UnittestSummary | None = None
    for i, line in enumerate(lines):
        ran = _RAN.match(line)
        if not ran:
            continue
        # unittest prints a blank line between the two
        rest = [x for x in lines[i + 1 : i + 4] if x.strip()]
        result = _RESULT.match(rest[0]) if rest else None
        if not result:
            continue
        counts = dict.fromkeys(("failures", "errors", "skipped"), 0)
        counts |= {"expected failures": 0, "unexpected successes": 0}
        for part in (result[2] or "").split(","):
            key, _, value = part.strip().partition("=")
            if key in counts and value.isdigit():
                counts[key] = int(value)
        found = UnittestSummary(
            ran=int(ran[1]),
            ok=result[1] == "OK",
            failures=counts["failures"],
            errors=counts["errors"],
            skipped=counts["skipped"],
            expected_failures=counts["expected failures"],
            unexpected_successes=counts["unexpected successes"],
        )
    return found


def _summary(stdout: str, stderr: str) -> UnittestSummary | None:
    # unittest reports on stderr; a summary printed to stdout by the code under test
    # must not override it
    return parse_unittest_summary(stderr) or parse_unittest_summary(stdout)


def run_passed(exit_code: int | None, stdout: str, stderr: str, *, timed_out: bool = False) -> bool:
    """Exit code 0 and a unittest summary that ran at least one test and says OK."""
    if timed_out or exit_code != 0:
        return False
    summary = _summary(stdout, stderr)
    return summary is not None and summary.ok and summary.ran > 0


def exceptions_raised(output: str) -> list[tuple[str, str]]:
    """(exception class name, message) for every traceback in `output`, in order."""
    found: list[tuple[str, str]] = []
    in_tb = False
    for line in output.splitlines():
        if _TB_START.match(line) or _TB_FRAME.match(line):
            in_tb = True
            continue
        if not in_tb or not line.strip() or line[0] in " \t":
            continue  # frames, source lines and carets are indented
        match = _EXC_LINE.match(line)
        if match and " " not in match["qual"]:
            found.append((match["qual"].rsplit(".", 1)[-1], (match["msg"] or "").strip()))
        in_tb = False
    return found


def _kind_of(name: str, message: str) -> FailureKind:
    if name in _BY_EXCEPTION:
        return _BY_EXCEPTION[name]
    if name in ("ValueError", "RuntimeError") and _SHAPE_WORDS.search(message):
        return FailureKind.TYPE_SHAPE
    return FailureKind.CRASH


def classify_failure(
    exit_code: int | None, stdout: str, stderr: str, *, timed_out: bool = False
) -> Failure | None:
    """The kind of failure of a test run, or None when it passed (see `run_passed`)."""
    if timed_out or exit_code in TIMEOUT_EXIT_CODES:
        return Failure(FailureKind.TIMEOUT, message="the test run timed out")
    if run_passed(exit_code, stdout, stderr):
        return None
    output = f"{stderr}\n{stdout}"
    raised = exceptions_raised(output)
    if raised:
        ranked = sorted(
            ((_kind_of(name, msg), name, msg) for name, msg in raised),
            key=lambda item: _PRIORITY.index(item[0]),
        )
        kind, name, msg = ranked[0]
        return Failure(kind, name, msg or None)
    if any(_UNITTEST_HEAD.match(line) for line in output.splitlines()):
        return Failure(FailureKind.WRONG_RESULT, message="unittest reported a failure")
    summary = _summary(stdout, stderr)
    if summary is not None and not summary.ok:
        return Failure(FailureKind.WRONG_RESULT, message="unittest reported a failure")
    if exit_code is not None and exit_code < 0:
        return Failure(FailureKind.CRASH, message=f"killed by signal {-exit_code}")
    if summary is None:
        return Failure(FailureKind.CRASH, message=f"exit code {exit_code}, no unittest summary")
    if summary.ran == 0:
        return Failure(FailureKind.CRASH, message="no test ran")
    return Failure(FailureKind.CRASH, message=f"exit code {exit_code}")


_REF_FILE = re.compile(r"\w+_ref\.py\b")
# calls that load code or read files by name
_LOADERS = {
    "__import__",
    "import_module",
    "find_spec",
    "spec_from_file_location",
    "run_module",
    "run_path",
    "reload",
    "open",
    "Path",
}
_EXIT_CALLS = {("sys", "exit"), ("os", "_exit"), ("os", "abort"), (None, "exit"), (None, "quit")}
_EXIT_NAMES = {"_exit", "abort"}  # reached by name: getattr(os, "_exit"), vars(os)["_exit"]
_MAIN = "__main__"


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _main_comparisons(tree: ast.AST) -> set[int]:
    """ids of the "__main__" constants in `__name__ == "__main__"` tests (harmless)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            if any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts):
                ids.update(id(p) for p in parts if isinstance(p, ast.Constant))
    return ids


_RAW_MEMORY = frozenset({"ctypes", "_ctypes", "pythonapi"})
"""Names through which Python code reads raw memory (the test process's secret)."""


def suspicious_access(
    code: str, *, test_script: str = "paper2code_test.py", reference_modules: tuple[str, ...] = ()
) -> list[str]:
    """Reasons to distrust a completion that reaches for the tests or the reference code.

    Flags: importing a `*_ref` module (or one of `reference_modules`) or the test script,
    also through `importlib`/`__import__`/`open`; string literals naming the test script,
    a `*_ref.py` file or a reference module; reaching the test script's own module
    (`sys.modules["__main__"]`, `import __main__`), through which the reference it
    imported is in reach; changing `unittest`; ending the interpreter early
    (`sys.exit`, `os._exit`, also by name: `getattr(os, "_exit")`); and ctypes, by
    import, attribute or name (raw memory, where the test report's secret is). Code that does not
    parse is checked with plain text patterns.
    """
    test_module = test_script.removesuffix(".py")
    refs = set(reference_modules)

    def is_ref(module: str) -> bool:
        return any(part.endswith("_ref") or part in refs for part in module.split("."))

    reasons: list[str] = []
    try:
        tree = ast.parse(code)
    except SyntaxError:
        text_rules = (
            (r"^\s*(from|import)\s+[\w.]*_ref\b", "imports a reference module"),
            (re.escape(test_module), f"mentions the test script {test_script}"),
            (r"\w+_ref\.py\b", "mentions a reference file"),
            (r"\b(sys\.exit|os\._exit)\s*\(|[\'\"]_exit[\'\"]", "ends the interpreter early"),
            (r"__main__", "reaches the test script's module (__main__)"),
            (r"\b_?ctypes\b|\bpythonapi\b", "uses ctypes (raw memory access)"),
        )
        for pattern, reason in text_rules:
            if re.search(pattern, code, re.MULTILINE) and reason not in reasons:
                reasons.append(reason)
        return reasons

    def add(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    harmless_main = _main_comparisons(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules.append(node.module)
            for module in modules:
                if module.split(".")[0] in _RAW_MEMORY:
                    add(f"imports {module} (raw memory access)")
                if is_ref(module):
                    add(f"imports reference module {module!r}")
                if module.split(".")[0] == test_module:
                    add(f"imports the test script {test_script}")
                if module.split(".")[0] == _MAIN:
                    add("reaches the test script's module (__main__)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if test_module in node.value:
                add(f"mentions the test script {test_script}")
            ref_file = _REF_FILE.search(node.value)
            if ref_file:
                add(f"mentions reference file {ref_file[0]!r}")
            elif node.value in refs:  # the paper's own reference modules, by name
                add(f"names reference module {node.value!r}")
            if node.value == _MAIN and id(node) not in harmless_main:
                add("reaches the test script's module (__main__)")
            if node.value in _EXIT_NAMES:
                add(f"names {node.value!r} and may end the test run early")
            if node.value in _RAW_MEMORY:
                add(f"names {node.value!r} (raw memory access)")
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and is_ref(node.slice.value)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "modules"
        ):
            add(f"reaches reference module {node.slice.value!r} through sys.modules")
        elif isinstance(node, ast.Attribute) and node.attr == "_exit":
            add("reaches os._exit and may end the test run early")
        elif isinstance(node, ast.Attribute) and node.attr in _RAW_MEMORY:
            add(f"reaches {node.attr} (raw memory access)")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute | ast.Subscript) and _root_name(t) == "unittest":
                    add("changes unittest")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                owner = func.value.id if isinstance(func.value, ast.Name) else ""
                target: tuple[str | None, str] = (owner, func.attr)
            elif isinstance(func, ast.Name):
                target = (None, func.id)
            else:
                continue
            if target in _EXIT_CALLS:
                add(f"calls {'.'.join(p for p in target if p)}() and may end the test run early")
            if target == (None, "setattr") and node.args and _root_name(node.args[0]) == "unittest":
                add("changes unittest")
            if target[1] in _LOADERS:
                for arg in node.args:
                    if (
                        isinstance(arg, ast.Constant)
                        and isinstance(arg.value, str)
                        and is_ref(arg.value.removesuffix(".py"))
                    ):
                        add(f"loads reference module {arg.value!r}")
    return reasons

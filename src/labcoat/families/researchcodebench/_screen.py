"""What a completion may reach, checked on its text before it runs.

A completion is a few lines of the paper's mathematics, and it runs in the process whose
tests decide its score. Code that reaches raw memory (a numpy view of an address through
`__array_interface__`, ctypes, `/proc/self/maps` through a descriptor), code objects, the
interpreter's frames, unittest or the process's exit can rewrite or forge that decision
(see docs/researchcodebench.md), so such a completion is refused: it fails without
running and is flagged. The rules are on the completion's own lines of the filled file:

- no import of a module that reaches memory, the interpreter, processes, files or the
  tests (`ctypes`, `gc`, `inspect`, `sys`, `os`, `types`, `pickle`, `unittest`, ...);
- no dunder name or attribute (`__array_interface__`, `__code__`, `__class__`, ...),
  and no string holding `__` or a refused name (`getattr(x, "ctypes")`);
- no attribute or name on the refused lists: code and frame internals (`co_code`,
  `cell_contents`, `f_back`), raw memory (`as_strided`, `ctypeslib`, `data_ptr`,
  `from_address`, `frombuffer`), files and loaders (`open`, `load`, `tofile`), unittest's
  machinery (`SkipTest`, `_callTestMethod`), the builtins that run strings or reach
  namespaces (`exec`, `eval`, `compile`, `globals`, `vars`, `id`, `type`);
- `os` and `sys` only as `os.path`/`os.environ`/`os.getenv`/`os.cpu_count`/`os.sep` and
  `sys.stdout`/`sys.stderr`/... (upstream's GMFlow writes to `sys.stdout` in a block);
- `getattr`/`setattr`/`hasattr`/`delattr` only with a literal name, `**` only on a name
  the completion did not build itself, no `global`/`nonlocal`, no `dir_fd=`.

Before those rules, what the completion may reach at all is an allowlist, not a list of past
cheats: every name it reads is one the paper's file binds outside the completion (its
imports, functions, classes, globals, the enclosing function's arguments and locals), one
the completion binds itself, or a builtin of plain computation (`len`, `range`, `min`,
`isinstance`, `ValueError`, ...; `_BUILTINS_OK`); every module it imports is one the paper's
file imports, or one of plain mathematics (`math`, `functools`, `itertools`, ...;
`_MODULES_OK`). `logging.sys.modules[...]` is refused at `logging` when the paper's file
does not import logging; what an allowed module holds is held by the run-time checks
(the reference and the test script are not in `sys.modules` while tests run).

A static screen of a dynamic language is not a proof; the grading checks that hold
without it are in `_test_main.py` and `_tests.py`. Measured: no reference snippet of the
bundled pset or of upstream's 20 papers is refused (`tests/researchcodebench/test_screen.py`).
"""

from __future__ import annotations

import ast
import re

# modules whose import gives a completion memory, the interpreter, processes, files or tests
_MODULES = frozenset((
    "ctypes", "_ctypes", "cffi", "mmap", "gc", "inspect", "sys", "os", "posix", "nt",
    "_posixsubprocess", "marshal", "importlib", "builtins", "types", "code", "codeop", "dis",
    "opcode", "pickle", "_pickle", "copyreg", "dill", "cloudpickle", "joblib", "shelve",
    "subprocess", "signal", "socket", "multiprocessing", "threading", "_thread", "concurrent",
    "asyncio", "shutil", "tempfile", "io", "_io", "pathlib", "glob", "faulthandler",
    "tracemalloc", "resource", "atexit", "weakref", "unittest", "pytest", "operator",
    "sysconfig", "site", "runpy", "pkgutil", "zipimport", "__main__", "_testcapi",
    "_testinternalcapi", "traceback", "numba", "llvmlite", "cython", "pyximport", "fcntl",
    "pty", "select", "abc", "dataclasses"
))  # fmt: skip
# the same modules as names or attributes (`torch.os`, a module the paper file imported);
# os and sys have their own rules below
_MODULE_NAMES = frozenset((
    "ctypes", "_ctypes", "cffi", "gc", "inspect", "marshal", "importlib", "builtins",
    "subprocess", "pickle", "mmap", "unittest", "weakref", "traceback", "_thread"
))  # fmt: skip
# names and attributes: code, frames and memory; files and loaders; unittest's machinery;
# ending the process or unittest's loop
_REACH = frozenset((
    "co_code", "co_consts", "co_names", "co_varnames", "_co_code_adaptive", "cell_contents",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_lasti", "tb_frame", "tb_next",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "_getframe",
    "settrace", "setprofile", "addaudithook", "audit", "as_strided", "stride_tricks",
    "ctypeslib", "data_ptr", "untyped_storage", "_C", "from_address", "from_buffer",
    "from_buffer_copy", "frombuffer", "fromfile", "tofile", "memmap", "from_file",
    "from_dlpack", "load", "loads", "read_pickle", "open", "fdopen", "dir_fd", "SkipTest",
    "save", "savez", "savez_compressed", "savetxt", "write_text", "write_bytes", "dump",
    "to_pickle", "skipTest", "_callTestMethod", "TestCase", "TestResult", "TestSuite",
    "TextTestRunner", "failureException", "_outcome", "_exit", "make_dataclass", "new_class",
    "ABCMeta", "KeyboardInterrupt", "SystemExit", "BaseException", "GeneratorExit"
))  # fmt: skip
# builtins that run strings, reach namespaces, give addresses or make types (as names only:
# `model.eval()` is a method)
_BUILTINS = frozenset((
    "exec", "eval", "compile", "breakpoint", "globals", "locals", "vars", "id", "type",
    "memoryview", "__import__", "exit", "quit", "open"
))  # fmt: skip
_OS_OK = frozenset({"path", "environ", "getenv", "cpu_count", "sep", "linesep"})
_SYS_OK = frozenset({"stdout", "stderr", "maxsize", "float_info", "version_info", "platform"})
_PROC = re.compile(r"(^|/)proc(/|$)|/dev/fd|\\bself/(fd|maps|mem)")
_ATTRIBUTE_BY_NAME = frozenset({"getattr", "setattr", "hasattr", "delattr"})
# the allowlist: builtins of plain computation, and modules of plain mathematics
_BUILTINS_OK = frozenset((
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr",
    "classmethod", "complex", "dict", "divmod", "enumerate", "filter", "float", "format",
    "frozenset", "getattr", "hasattr", "setattr", "delattr", "hash", "hex", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
    "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed",
    "round", "set", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple",
    "zip", "NotImplemented", "Ellipsis", "Exception", "ArithmeticError", "AssertionError",
    "AttributeError", "FloatingPointError", "IndexError", "KeyError", "LookupError",
    "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
    "ValueError", "ZeroDivisionError", "Warning", "UserWarning", "RuntimeWarning",
    "DeprecationWarning", "FutureWarning",
))  # fmt: skip
_MODULES_OK = frozenset((
    "math", "cmath", "numbers", "fractions", "decimal", "statistics", "random", "functools",
    "itertools", "collections", "typing", "copy", "heapq", "bisect", "string", "enum",
    "warnings",
))  # fmt: skip


def screen_completion(filled: str, first: int, last: int, *, allowlist: bool = True) -> list[str]:
    """Why the completion on lines `first`..`last` (1-based) of `filled` is refused."""
    try:
        tree = ast.parse(filled)
    except (SyntaxError, ValueError):
        lines = filled.splitlines()[first - 1 : last]
        return _screen_text("\n".join(lines))
    nodes = [n for n in ast.walk(tree) if first <= getattr(n, "lineno", 0) <= last]
    others = [n for n in ast.walk(tree) if not first <= getattr(n, "lineno", 0) <= last]
    screen = _Screen(nodes)
    reasons = _allowlist_reasons(nodes, others) if allowlist else []
    for node in nodes:
        for reason in screen.reasons(node):
            if reason not in reasons:
                reasons.append(reason)
    return reasons


def _bound(nodes: list[ast.AST]) -> tuple[set[str], set[str]]:
    """(names bound, top-level modules imported) by `nodes`."""
    names: set[str] = set()
    modules: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
                modules.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
            if node.module and not node.level:
                modules.add(node.module.split(".")[0])
    return names, modules


def _allowlist_reasons(nodes: list[ast.AST], others: list[ast.AST]) -> list[str]:
    """What the completion reaches beyond the file's own names and plain mathematics."""
    file_names, file_modules = _bound(others)
    own_names, _ = _bound(nodes)
    names = file_names | own_names | _BUILTINS_OK
    modules = file_modules | _MODULES_OK
    reasons: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
                continue  # a relative import: `imports relatively` below
            wanted = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            wanted += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for module in wanted:
                top = module.split(".")[0]
                if top not in modules and top not in _MODULES:  # _MODULES: its own reason
                    reasons.append(f"imports {module}, which the paper's file does not")
        elif (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id not in names
            and "__" not in node.id  # the rules below name these, and refused builtins
            and node.id not in _BUILTINS | _REACH | _MODULE_NAMES
        ):
            reasons.append(
                f"uses {node.id}, which neither the paper's file nor plain computation gives it"
            )
    return list(dict.fromkeys(reasons))


def screen_code(code: str) -> list[str]:
    """`screen_completion`'s rules past the allowlist, for a completion on its own (with no
    file around it, every name it reads would be outside the allowlist)."""
    return screen_completion(code, 1, max(1, len(code.splitlines())), allowlist=False)


def _screen_text(text: str) -> list[str]:
    """Code that does not parse cannot run; its words are still checked (a block that
    parses only with what surrounds it is parsed in its file above)."""
    reasons = ["uses a dunder name"] if "__" in text else []
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    refused = _MODULE_NAMES | _REACH | _BUILTINS | {"os", "sys"}
    reasons += [f"uses {word}" for word in sorted(words & refused)]
    return reasons + (["names /proc"] if "/proc" in text else [])


def _refused_name(name: str) -> str | None:
    """Why an attribute name (also a literal one: `getattr(x, "name")`) is refused."""
    if "__" in name and name != "__init__":  # super().__init__()
        return f"reaches the dunder attribute {name}"
    if name in _REACH or name in _MODULE_NAMES:
        return f"reaches {name}"
    return None


class _Screen:
    def __init__(self, nodes: list[ast.AST]) -> None:
        # names the completion assigns: a mapping it builds may carry names made at run time
        self.built = {
            n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        # `os.path`, `sys.stdout`: the only uses of os and sys
        self.allowed = {
            id(n.value)
            for n in nodes
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and (n.value.id, n.attr) in {("os", a) for a in _OS_OK} | {("sys", a) for a in _SYS_OK}
        }

    def reasons(self, node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            return _import_reasons(node)
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Attribute):
            why = _refused_name(node.attr)
            return [why] if why else []
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            return _string_reasons(node.value)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.arg):
            name = node.arg if isinstance(node, ast.arg) else node.name
            # a class's own protocol (`__eq__` that agrees with anything, `__array__`,
            # `__fspath__`) is how an object fools a test: only `__init__` is plain
            plain = "__" not in name or name == "__init__"
            return [] if plain else [f"defines the dunder name {name}"]
        if isinstance(node, ast.keyword):
            if node.arg is None:
                return self._unpacking(node.value)
            why = _refused_name(node.arg)
            return [why] if why else []
        if isinstance(node, ast.Dict):
            pairs = zip(node.keys, node.values, strict=True)
            return [r for k, v in pairs if k is None for r in self._unpacking(v)]
        if isinstance(node, ast.Call):
            return _call_reasons(node)
        if isinstance(node, ast.Global | ast.Nonlocal):
            return ["rebinds names outside its block (global/nonlocal)"]
        return []

    def _name(self, node: ast.Name) -> list[str]:
        name = node.id
        if "__" in name:
            return [f"uses the dunder name {name}"]
        if name in ("os", "sys") and id(node) not in self.allowed:
            allowed = "/".join(sorted(_OS_OK if name == "os" else _SYS_OK))
            return [f"reaches {name} beyond {allowed}"]
        if name in _BUILTINS or name in _REACH or name in _MODULE_NAMES:
            return [f"uses {name}"]
        return []

    def _unpacking(self, value: ast.AST) -> list[str]:
        """`**mapping`: a parameter or the surrounding code's mapping, never one it built."""
        if isinstance(value, ast.Name) and value.id not in self.built:
            return []
        if isinstance(value, ast.Attribute):
            return []
        return ["unpacks a mapping it built into keywords (names made at run time)"]


def _import_reasons(node: ast.Import | ast.ImportFrom) -> list[str]:
    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
    if isinstance(node, ast.ImportFrom):
        modules.append(node.module or "")
        modules += [a.name for a in node.names]  # `from numpy import ctypeslib`
    reasons = [f"imports {m}" for m in modules if m.split(".")[0] in _MODULES]
    reasons += [f"imports {m}" for m in modules if any(_refused_name(p) for p in m.split("."))]
    if isinstance(node, ast.ImportFrom) and node.level:
        reasons.append("imports relatively")
    return list(dict.fromkeys(reasons))


def _string_reasons(value: str | bytes) -> list[str]:
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    if "__" in text:
        return ["holds a string with a dunder name"]
    if _PROC.search(text):
        return ["names /proc or the root folder"]
    return []


def _call_reasons(node: ast.Call) -> list[str]:
    func = node.func
    if isinstance(func, ast.Name) and func.id in _ATTRIBUTE_BY_NAME:
        name = node.args[1] if len(node.args) > 1 else None
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return [f"reaches an attribute by a computed name ({func.id})"]
        why = _refused_name(name.value)
        return [why] if why else []
    return []

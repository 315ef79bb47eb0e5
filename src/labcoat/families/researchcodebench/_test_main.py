"""The test process of a graded run: runs `paper2code_test.py` and reports its outcome.

Not imported by labcoat: its text runs inside the grading sandbox, in the process that
runs the tests (forked from the preloaded interpreter, or `python3 -c TEXT CONFIG`).
The outcome does not come from what the process prints or how it exits, both of which
the code under test controls, but from a report on a pipe to the runner:

- A per-run secret (a nonce) arrives on a pipe that the runner fills only after this
  process exists; it is read once, before any code of the paper runs, and kept only
  inside an audit hook (`sys.addaudithook`: hooks cannot be removed or listed).
- unittest's result methods are wrapped: every outcome of a test method defined in the
  test script, reached through unittest's own machinery, is counted inside the hook.
  Calls that do not come from unittest itself, and test methods defined anywhere else,
  are flagged.
- After the script ends, what the completion could have tampered with is checked:
  unittest's classes against a snapshot taken before the script ran, and every library
  module, reference module and test class for functions defined in the completion's
  file. Then the hook writes one report, with the nonce, to the pipe.
- The hook also flags, when they come from the completion's own lines: opening the test
  script or a `*_ref.py` file, importing a `*_ref` module, compiling code under the test
  script's name, reaching frames (`sys._getframe`, `tb_frame`) or the garbage
  collector's object lists, and network access. Anything else that tries network access
  is noted (the paper needs network). Every flag goes to the runner at once.

- Once the script runs, the hook also flags what reaches memory from any code that is
  not installed (ctypes, the garbage collector's lists, `/proc/<pid>/mem` and `maps`,
  `/` or `/proc` opened as a descriptor, `exec`/`compile` called on the completion's lines),
  and unittest's functions, the test methods and the decision modules' functions are
  checked for bytecode changed in place (a numpy view of a code object's address).

- What the tests compare and compute their expected values from is the tests' own (round
  four): comparisons (unittest's assert methods, numpy's and torch's) fail on array
  subclasses (a masked array agrees with anything); the reference modules and the
  script's module are out of `sys.modules` while the tests run, and the script's globals
  and test methods are held by identity; the block's functions report what they change in
  place, by role, and put back what the runner names (`protect`: what the reference
  block does not change) after every call.

The memory and `/proc` rules are `labcoat/grading/_audit_guard.py`'s, whose text is put
ahead of this one (PaperBench's `python` checks use the same source).

The runner passes a run only with a report carrying the nonce, at least one test run,
no failure or error, and no flag; a process that ends early (`os._exit`) has no report.
The report lists each test's outcomes, which labcoat checks against the tests it reads
from the pristine script (`_tests.py`): whatever this process says, it says it from the
completion's process, so what can be decided outside it is.
"""

_INTROSPECTION = (
    "sys._getframe",
    "sys._current_frames",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
)
_FRAME_ATTRS = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")
_CTYPES = ("ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata")


def _labcoat_installed(run_dir):
    """Folder prefixes of installed code: the interpreter's own, and the folders on the path
    that the test process cannot write (the task environment's packages, mounted
    read-only); never the run's folder."""
    import os
    import sys
    import sysconfig

    paths = sysconfig.get_paths()
    roots = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key)]
    roots += [p for p in sys.path if p and os.path.isdir(p) and not os.access(p, os.W_OK)]
    prefixes = (os.path.realpath(p) + os.sep for p in roots)
    return tuple(dict.fromkeys(p for p in prefixes if not p.startswith(run_dir)))


def _labcoat_install(cfg, wrapper_codes, finish_codes):
    """Register the audit hook; only the hook ever holds the nonce and the tallies.
    Returns the prefixes of installed code (`_labcoat_installed`)."""
    import json
    import os
    import sys

    nonce = os.read(cfg["nonce_fd"], 256).decode()
    os.close(cfg["nonce_fd"])
    report_fd = cfg["report_fd"]
    script_name = cfg["script"]
    script_module = script_name[:-3] if script_name.endswith(".py") else script_name
    watch = cfg.get("watch")
    target = os.path.realpath(os.path.join(cfg["run_dir"], watch["file"])) if watch else None
    first, last = (watch["first_line"], watch["last_line"]) if watch else (0, -1)
    base = os.path.basename(target) if target else None
    realpath, basename, write = os.path.realpath, os.path.basename, os.write
    getframe = sys._getframe
    run_dir = realpath(cfg["run_dir"]) + os.sep
    installed = _labcoat_installed(run_dir)
    own_codes = set()

    def collect(code):
        own_codes.add(code)
        for const in code.co_consts:
            if type(const) is type(code):
                collect(const)

    # `_labcoat_memory_guard`: labcoat/grading/_audit_guard.py's text, put ahead of this one
    guard = _labcoat_memory_guard  # noqa: F821
    for function in (_labcoat_install, _labcoat_run, _labcoat_run_as_main, guard):
        collect(function.__code__)
    locked = []  # one entry once the test script is about to run
    # the memory and /proc rules, one source with PaperBench's checks (grading/_audit_guard.py)
    memory_check, tools = guard(installed, run_dir, own_codes)
    plain, path_text, trusted = tools["plain"], tools["path_text"], tools["trusted"]
    trusted_origin, import_system = tools["trusted_origin"], tools["import_system"]

    state = {"reported": False, "ran": 0, "failures": 0, "errors": 0, "skipped": 0, "ok": 0}
    outcomes = {}
    seen_flags = set()
    network = []
    busy = []

    def send(kind, text):
        try:
            write(report_fd, (f"{kind} {nonce} " + text.replace("\n", " ") + "\n").encode())
        except OSError:
            os.kill(os.getpid(), 9)  # the channel was closed: no report, no pass

    def flag(text):
        if text not in seen_flags:
            seen_flags.add(text)
            send("FLAG", text)

    def on_completion(frame):
        return (
            frame is not None
            and base is not None
            and type(frame.f_code.co_filename) is str
            and frame.f_code.co_filename.endswith(base)
            and first <= frame.f_lineno <= last
            and realpath(frame.f_code.co_filename) == target
        )

    def completion_in_stack(frame):
        while frame is not None:
            if on_completion(frame):
                return True
            frame = frame.f_back
        return False

    def direct_caller(depth):
        """The frame that called the audited operation (past inspect's helpers)."""
        try:
            frame = getframe(depth)
        except ValueError:
            return None
        name = frame.f_code.co_filename if frame is not None else None
        if type(name) is str and name.endswith("inspect.py"):
            return frame.f_back
        return frame

    def wrote_code(args, caller):
        opened = path_text(args[0])
        if type(opened) is not str:
            return
        absolute = opened if opened.startswith("/") else os.path.join(os.getcwd(), opened)
        resolved = realpath(absolute)
        code_file = resolved.endswith((".py", ".pth", ".so", ".pyc"))
        if code_file and writes(args) and not trusted_origin(caller):
            flag(f"wrote code to {basename(resolved)}")

    def writes(args):
        """Whether an `open` event's mode or flags write (builtins.open: mode text;
        os.open: None and the flags)."""
        mode = args[1] if len(args) > 1 else None
        if type(mode) is str:
            return any(c in mode for c in "wax+")
        flags = args[2] if len(args) > 2 else 0
        return type(flags) is int and bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))

    def on_compile(args, caller):
        name = path_text(args[1]) if len(args) > 1 else None
        spoof = type(name) is str and (name.startswith(installed) or name == "<labcoat test main>")
        if spoof and not trusted(caller):
            flag(f"compiled code under the name of {name}")

    def on_locked(event, args):
        caller = getframe(3)
        why = memory_check(event, args, caller)
        if why is not None:
            flag(why)
            return
        if event == "open" and args:
            wrote_code(args, caller)
        elif event in ("exec", "compile") and not import_system(caller):
            # the completion's own call only: libraries compile strings of their own when
            # it calls them (typing's forward references, upstream's eomt, fractalgen)
            if on_completion(caller):
                flag(f"ran code made from text at run time ({event})")
            if event == "compile":
                on_compile(args, caller)

    def hook(event, args):
        if busy:
            return
        busy.append(1)
        try:
            _event(event, args)
        except Exception:
            pass
        finally:
            busy.pop()

    def _event(event, args):
        if event == "labcoat.flag":
            flag(args[0] if len(args) == 1 and type(args[0]) is str else "flagged itself")
            return
        if event == "labcoat.lockdown":
            caller = getframe(2)
            if caller is not None and caller.f_code in finish_codes:
                locked.append(1)
            return
        if locked:
            on_locked(event, args)
        if event == "labcoat.outcome":
            caller = getframe(2)
            if caller is None or caller.f_code not in wrapper_codes:
                flag("reported a test outcome to labcoat itself")
                return
            if len(args) != 2 or type(args[0]) is not str or type(args[1]) is not str:
                flag("reported a malformed test outcome")
                return
            kind, test_id = args
            outcomes.setdefault(test_id, set()).add(kind)
            if kind == "start":
                state["ran"] += 1
            elif kind in ("failure", "error", "unexpected_success"):
                state["failures" if kind == "failure" else "errors"] += 1
            elif kind == "skip":
                state["skipped"] += 1
            elif kind in ("success", "expected_failure"):
                state["ok"] += 1
            return
        if event == "labcoat.report":
            caller = getframe(2)
            if caller is None or caller.f_code not in finish_codes or state["reported"]:
                flag("sent labcoat a test report itself")
                return
            state["reported"] = True
            listed = {test_id: sorted(kinds) for test_id, kinds in outcomes.items()}
            report = {**state, **args[0], "tests": len(outcomes), "outcomes": listed}
            send("REPORT", json.dumps(report))
            return
        if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
            if completion_in_stack(getframe(2)):
                flag("tried to reach the network")
            elif not network:
                where = plain(args[1] if event == "socket.connect" else args[0])[:80]
                network.append(where)
                send("NETWORK", f"{event} {where}")
            return
        if watch is None:
            return
        if event == "open":
            opened = path_text(args[0])
            if type(opened) is not str:
                return
            name = basename(opened)
            answers = name == script_name or name.endswith("_ref.py")
            private = opened.startswith("/proc/") and ("/mem" in opened or "/environ" in opened)
            if (answers or private) and completion_in_stack(getframe(2)):
                flag(f"opened {opened if private else name}")
        elif event == "import":
            module = args[0]
            last_part = module.rsplit(".", 1)[-1]
            if (last_part == script_module or last_part.endswith("_ref")) and completion_in_stack(
                getframe(2)
            ):
                flag(f"imported {module}")
        elif event == "compile":
            filename = path_text(args[1]) if len(args) > 1 else None
            named = type(filename) is str and basename(filename) == script_name
            if named and completion_in_stack(getframe(2)):
                flag(f"compiled code under the name of {script_name}")
        elif event in _INTROSPECTION:
            if on_completion(direct_caller(3)):
                flag(f"inspected the interpreter's internals ({event})")
        elif event == "object.__getattr__" and len(args) > 1 and plain(args[1]) in _FRAME_ATTRS:
            if on_completion(direct_caller(3)):
                flag(f"inspected the interpreter's internals ({args[1]})")
        elif event in _CTYPES and completion_in_stack(getframe(2)):
            flag(f"used ctypes ({event})")

    try:  # no other process (of this user) may read this one's memory: PR_SET_DUMPABLE 0
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:  # not Linux, or no libc: nothing to narrow
        pass
    sys.addaudithook(hook)
    return installed


def _labcoat_run(cfg, fresh_modules):
    """Install the hook, run the script as `python SCRIPT` would, report; the exit code.

    `fresh_modules`: what a fresh interpreter has loaded; any other module loaded so
    far (by labcoat or a preloading runner) that a file of the paper would shadow is
    dropped before the script runs, after labcoat's own imports are done.
    """
    import os
    import sys

    wrapper_codes = set()
    finish_codes = set()
    installed = _labcoat_install(cfg, wrapper_codes, finish_codes)
    for name in cfg.get("modules") or ():  # what the tests import from outside the paper:
        try:  # noqa: SIM105 - loaded now, so the tamper check below holds them
            __import__(name)
        except BaseException:  # the script's own import will say what is wrong
            pass
    script = os.path.join(cfg["run_dir"], cfg["script"])
    script_name = cfg["script"]
    run_dir = os.path.realpath(cfg["run_dir"])
    watch = cfg.get("watch")
    target = os.path.realpath(os.path.join(cfg["run_dir"], watch["file"])) if watch else None
    first, last = (watch["first_line"], watch["last_line"]) if watch else (0, -1)
    realpath = os.path.realpath
    unittest_files = set()

    def flag(text):
        sys.audit("labcoat.flag", text)

    # --- unittest's outcomes, counted inside the hook --------------------------------

    import types
    import unittest
    import unittest.result
    import unittest.suite

    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name == "unittest" or name.startswith("unittest."):
            file = getattr(module, "__file__", None)
            if file:
                unittest_files.add(os.path.dirname(realpath(file)))

    def from_script(test):
        method = getattr(type(test), getattr(test, "_testMethodName", ""), None)
        code = getattr(method, "__code__", None)
        return code is not None and realpath(code.co_filename) == realpath(script)

    def wrap(name, kind):
        original = getattr(unittest.result.TestResult, name)

        def wrapper(self, test, *rest):
            try:
                caller = sys._getframe(1).f_code.co_filename
            except ValueError:
                caller = ""
            if os.path.dirname(realpath(caller)) not in unittest_files:
                flag(f"called unittest's {name} itself")
            elif from_script(test):
                found = changed(scope_of_outcomes) + rebound() + rewritten(test)
                for text in found + script_changed():
                    flag(text)
                test_id = test.id()
                test_id = str.__str__(test_id) if isinstance(test_id, str) else repr(test)
                sys.audit("labcoat.outcome", kind, test_id)
            elif getattr(test, "_testMethodName", None) is not None:
                flag(f"ran a test not defined in {script_name}: {test.id()}")
            return original(self, test, *rest)

        wrapper_codes.add(wrapper.__code__)
        return wrapper

    kinds = {
        "startTest": "start",
        "addSuccess": "success",
        "addFailure": "failure",
        "addError": "error",
        "addSkip": "skip",
        "addExpectedFailure": "expected_failure",
        "addUnexpectedSuccess": "unexpected_success",
    }
    for name, kind in kinds.items():
        setattr(unittest.result.TestResult, name, wrap(name, kind))
    original_subtest = unittest.result.TestResult.addSubTest

    def add_subtest(self, test, subtest, err):
        if err is not None and from_script(test):
            failed = issubclass(err[0], test.failureException)
            test_id = test.id()  # the test's, so the runner finds it among the script's
            test_id = str.__str__(test_id) if isinstance(test_id, str) else repr(test)
            sys.audit("labcoat.outcome", "failure" if failed else "error", test_id)
        return original_subtest(self, test, subtest, err)

    wrapper_codes.add(add_subtest.__code__)
    unittest.result.TestResult.addSubTest = add_subtest

    local = set()  # the paper's own module names
    for _, dirs, files in os.walk(run_dir):
        local.update(dirs)
        local.update(f[:-3] for f in files if f.endswith(".py"))

    # --- what the tests decide with, as it was before the script ran ------------------
    # Every module loaded by now (labcoat's, the interpreter's, the preloaded ones the tests
    # import) is held by identity: its functions and classes, and each of its classes' own
    # members. A change anywhere (a callable object put in place of numpy.testing's
    # assert_allclose, a function compiled under numpy's file name) is found at every test
    # outcome, for the modules the tests use, and at the end, for all of them.

    def behaviour(value):
        """Methods and the descriptors that wrap them; data a class keeps (weakref.finalize's
        `_shutdown` flag, caches) may change at run time."""
        return callable(value) or isinstance(value, classmethod | staticmethod | property)

    def snapshot():
        held = []
        for name, module in list(sys.modules.items()):
            if module is None or name == "__main__":
                continue
            file = getattr(module, "__file__", None) or ""
            if file and realpath(file).startswith(run_dir + os.sep):
                continue  # the paper's own modules may use the completion
            try:
                members = dict(vars(module))
            except TypeError:
                continue
            kept = {k: v for k, v in members.items() if callable(v) or k == "__getattr__"}
            held.append((name, module, kept, None))
            for value in kept.values():
                if isinstance(value, type) and value.__module__ == name:
                    members = {k: v for k, v in dict(vars(value)).items() if behaviour(v)}
                    held.append((f"{name}.{value.__qualname__}", value, members, 1))
        return held

    from functools import _lru_cache_wrapper
    from types import FunctionType

    # what tests decide with: no library changes these classes at run time
    strict = ("builtins", "unittest", "numpy", "torch._tensor", "torch.testing")

    def installed_file(module_name):
        module = sys.modules.get(module_name) if type(module_name) is str else None
        file = getattr(module, "__file__", None) if module is not None else None
        return file is None or (type(file) is str and realpath(file).startswith(installed))

    def by_library(label, now, key):
        """Whether what a class holds now is a library's own doing (torch wrapping an
        optimizer's `step`, pyparsing switching on its cache, transformers adding
        `Logger.warning_once`, jaxlib adding a method from C++): a function of installed
        code, or an object of an installed or built-in type, in a class outside the
        modules the tests decide with. A function of the paper's files or an object of a
        class they define is a patch. Modules' own names allow no such change: libraries
        rebind no module functions at run time."""
        if any(label == p or label.startswith(p + ".") for p in strict):
            return False
        value = now.get(key)
        if type(value) in (staticmethod, classmethod):
            value = value.__func__
        elif type(value) is property:
            value = value.fget
        if type(value) is _lru_cache_wrapper:
            value = value.__wrapped__
        if type(value) is FunctionType:
            name = value.__code__.co_filename
            return type(name) is str and name.startswith(installed)
        return installed_file(type(value).__module__)

    def changed(scope):
        found = []
        for label, owner, kept, is_class in before:
            if scope is not None and label.split(".", 1)[0] not in scope:
                continue
            now = vars(owner)
            for key, value in kept.items():
                changed_here = now.get(key, changed) is not value
                if changed_here and not (is_class and by_library(label, now, key)):
                    found.append(f"changed {label}.{key}")
            # a method added to a class, or a module-level __getattr__: both change lookups
            # (data that libraries cache on classes, such as __slotnames__, is not callable)
            for key in [k for k in now if k not in kept]:
                added = (is_class and behaviour(now[key])) or key == "__getattr__"
                if added and not (is_class and by_library(label, now, key)):
                    found.append(f"added {label}.{key}")
        return found[:10]

    def script_imports():
        """(module, name, bound as) of the script's `from X import Y as Z`, and the top-level
        packages it imports."""
        import ast

        try:
            with open(script, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            return [], set()
        names, packages, aliases = [], set(), {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                packages.add(node.module.split(".")[0])
                names += [(node.module, a.name, a.asname or a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                packages.update(a.name.split(".")[0] for a in node.names)
                aliases.update((a.asname or a.name.split(".")[0], a.name) for a in node.names)
        # submodules the script reaches as attributes (np.testing.assert_allclose): loaded
        # now, or the completion could load and patch them before the snapshot sees them
        for node in ast.walk(tree):
            chain = []
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id in aliases and chain:
                module = aliases[node.id] if "." not in aliases[node.id] else node.id
                for attr in reversed(chain[1:]):  # the last attribute is the function
                    module = f"{module}.{attr}"
                    if module.split(".")[0] in local:
                        break
                    try:
                        __import__(module)
                    except BaseException:  # not a module: an attribute
                        break
        return names, packages

    # --- what the tests compute their expected values with ------------------------------
    # The reference modules (`*_ref`) and the test script's own module hold what the tests
    # compute their expected values with. While the tests run (from the first suite's
    # start to the script's end), none is in `sys.modules`: `__main__` there is an empty
    # module, and no attribute path from what the completion can name (`logging.sys.modules`,
    # `np.sys.modules`) leads to them; the tests keep their own references. The script's
    # globals and its test classes' methods are held by identity from then on: a helper
    # that computes an expected value replaced, or one test bound to another, is flagged.
    hidden = {}  # name -> module, while the tests run
    script_state = []  # (label, owner, {name: value})

    def is_answer(name, module):
        if name.rsplit(".", 1)[-1].endswith("_ref"):
            return True
        try:
            file = vars(module).get("__file__")
        except TypeError:
            return False
        return type(file) is str and os.path.basename(file).endswith("_ref.py")

    decoys = []  # the empty __main__ while the tests run
    finders = []  # the finder that gives a hidden module back to an import of it

    def give_back(fullname, path=None, target=None):
        """A test's own `import model_ref` (upstream's LEN does it in setUp) gets the module
        the script already holds, not a second copy; `rehide` takes it out again."""
        module = hidden.get(fullname) if fullname != "__main__" else None
        if module is None:
            return None

        class Loader:
            def create_module(self, spec):
                return module

            def exec_module(self, module):
                pass

        import importlib.util

        return importlib.util.spec_from_loader(fullname, Loader(), origin=None)

    def rehide():
        """Out of `sys.modules` again (as the block's functions are entered)."""
        for name, module in hidden.items():
            if name != "__main__" and sys.modules.get(name) is module:
                del sys.modules[name]
        if decoys and sys.modules.get("__main__") is hidden.get("__main__"):
            sys.modules["__main__"] = decoys[0]

    def hide_answers():
        if "__main__" in hidden:
            return
        main = sys.modules.get("__main__")
        for name, module in list(sys.modules.items()):
            if module is not None and name != "__main__" and is_answer(name, module):
                hidden[name] = sys.modules.pop(name)
        hidden["__main__"] = main
        decoy = types.ModuleType("__main__")
        decoy.__file__ = script
        decoys.append(decoy)
        sys.modules["__main__"] = decoy
        finder = types.SimpleNamespace(find_spec=give_back)
        finders.append(finder)
        sys.meta_path.insert(0, finder)
        if main is None:
            return
        members = {k: v for k, v in dict(vars(main)).items() if "__" not in k}
        script_state.append((script_name, main, members))
        for value in members.values():
            if isinstance(value, type) and issubclass(value, unittest.TestCase):
                kept = {k: v for k, v in dict(vars(value)).items() if behaviour(v)}
                script_state.append((f"{script_name}'s {value.__qualname__}", value, kept))

    def restore_answers():
        for finder in finders:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
        for name, module in hidden.items():
            sys.modules[name] = module

    def script_changed():
        found = []
        for label, owner, kept in script_state:
            now = vars(owner)
            for key, value in kept.items():
                if now.get(key, script_changed) is not value:
                    found.append(f"changed {label}.{key}")
        return found[:10]

    def hide_answers_while_tests_run():
        suite_run = unittest.suite.TestSuite.run

        def run(self, result, debug=False):
            if "__main__" not in hidden:
                watch_the_block()
            hide_answers()
            return suite_run(self, result, debug)

        unittest.suite.TestSuite.run = run

    # --- what the block changes in place ------------------------------------------------
    # A test often computes its expected value after calling the code under test, from the
    # same arrays (the caller's `x`, the instance's `self.w_o`): a block that zeroes them in
    # place makes the expected value agree with a wrong answer. Each function of the paper
    # that holds the block is wrapped as the first suite starts: at every call, the arrays
    # and tensors it can reach (its arguments, their attributes and items, a module's
    # parameters and buffers, its module's globals) are fingerprinted before and after,
    # and what changed is reported by role (`x`, `self.w_o`). The runner compares with what
    # the reference block changes (its own run of the reference) and, where the
    # completion changed more, grades it again with those roles put back after each call
    # (`protect`): the tests read what they gave, whatever the block wrote.
    mutated = set()
    protect = set(cfg.get("protect") or ())
    # bytes of an array hashed whole; a larger one is sampled (with its sum). Small, since
    # a function an optimiser calls thousands of times is fingerprinted at every call:
    # upstream llm-sci-use's log-likelihood ran out of its CPU time at 1 MiB
    whole = 64 << 10
    sampled = 4096
    drawn = {}  # size -> the positions read of an array that large
    import itertools
    import random as _random

    sampler = _random.Random(os.urandom(16))

    def is_array(value):
        np = sys.modules.get("numpy")
        torch = sys.modules.get("torch")
        if np is not None and isinstance(value, np.ndarray):
            return True
        return torch is not None and isinstance(value, torch.Tensor)

    plain = (int, float, complex, bool, str, bytes, type(None))  # hold no array

    def reachable(role, value, depth, seen, out):
        if id(value) in seen:
            return
        seen.add(id(value))
        if is_array(value):
            out.append((role, value))
            return
        if depth >= 2 or isinstance(value, type):
            return
        kind = type(value)
        torch = sys.modules.get("torch")
        if kind in (list, tuple):
            for i, item in enumerate(value[:64]):
                if type(item) not in plain:
                    reachable(f"{role}[{i}]", item, depth + 1, seen, out)
        elif kind is dict:
            # islice: a paper's dict of 50,000 words is not copied at every call
            for key, item in itertools.islice(value.items(), 256):
                if type(key) in (str, int) and type(item) not in plain:
                    reachable(f"{role}[{key!r}]", item, depth + 1, seen, out)
        elif torch is not None and isinstance(value, torch.nn.Module):
            for name, tensor in list(value.named_parameters()) + list(value.named_buffers()):
                reachable(f"{role}.{name}", tensor, depth + 1, seen, out)
        else:
            try:
                members = object.__getattribute__(value, "__dict__")
            except Exception:
                return
            if type(members) is dict:
                for key, item in itertools.islice(members.items(), 256):
                    if type(key) is str and type(item) not in plain:
                        reachable(f"{role}.{key}", item, depth + 1, seen, out)

    def roles(code, module, args, kwargs):
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        out, seen = [], set()
        for i, value in enumerate(args):
            reachable(names[i] if i < len(names) else f"*{i}", value, 0, seen, out)
        for key, value in kwargs.items():
            reachable(str(key), value, 0, seen, out)
        try:
            members = list(vars(module).items()) if module is not None else []
        except TypeError:
            members = []
        for key, value in members:
            if type(key) is str and "__" not in key and is_array(value):
                reachable(f"global {key}", value, 1, seen, out)
        return out

    def positions(count):
        """`sampled` positions out of `count`, drawn once per size at run time (the block
        cannot know which entries of a large array are read)."""
        if count not in drawn:
            drawn[count] = sorted(sampler.sample(range(count), min(sampled, count)))
        return drawn[count]

    def raw_bytes(value):
        """The entries of an array or tensor as bytes: all of them up to `whole` bytes, else
        `sampled` of them at positions drawn at run time (with their sum): a block that
        rewrites a large array (zeroes a model's weights) changes them."""
        np = sys.modules.get("numpy")
        if np is not None and isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                return None
            if value.nbytes <= whole:
                return np.ascontiguousarray(value).reshape(-1).view(np.uint8).tobytes()
            flat = value.reshape(-1)  # a view when it can be
            picked = np.ascontiguousarray(flat[np.asarray(positions(flat.size))])
            return picked.view(np.uint8).tobytes() + repr(flat.sum()).encode()
        import torch

        tensor = value.detach()
        if tensor.is_sparse or tensor.device.type == "meta":
            return None
        flat = tensor.reshape(-1)
        if flat.numel() * flat.element_size() > whole:
            index = torch.tensor(positions(flat.numel()), device=flat.device)
            total = repr(flat.double().sum().item()).encode()
            flat = flat[index]
        else:
            total = b""
        flat = flat.cpu().contiguous()
        return flat.view(torch.uint8).numpy().tobytes() + total

    def fingerprint(value):
        import hashlib

        try:
            raw = raw_bytes(value)
        except Exception:
            return None
        if raw is None:
            return None
        return (tuple(value.shape), str(value.dtype), hashlib.blake2b(raw).digest())

    def saved(value):
        try:
            return value.copy() if not hasattr(value, "detach") else value.detach().clone()
        except Exception:
            return None

    def put_back(value, copy):
        try:
            if hasattr(value, "detach"):
                import torch

                with torch.no_grad():
                    value.copy_(copy)
            else:
                value[...] = copy
        except Exception:
            pass

    def watched(original, module):
        code = original.__code__

        def call(*args, **kwargs):
            try:
                found = roles(code, module, args, kwargs)
                prints = [(role, value, fingerprint(value)) for role, value in found]
                keep = [(v, saved(v)) for role, v in found if role in protect]
            except Exception:
                prints, keep = [], []
            rehide()
            try:
                return original(*args, **kwargs)
            finally:
                for role, value, before in prints:
                    if before is not None and fingerprint(value) != before:
                        mutated.add(role)
                for value, copy in keep:
                    if copy is not None:
                        put_back(value, copy)

        for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:  # noqa: SIM105
                setattr(call, attribute, getattr(original, attribute))
            except Exception:
                pass
        return call

    def holds_block(function):
        code = getattr(function, "__code__", None)
        if code is None or type(code.co_filename) is not str or target is None:
            return False
        if realpath(code.co_filename) != target:
            return False
        todo = [code]
        while todo:
            c = todo.pop()
            if any(first <= line <= last for _, _, line in c.co_lines() if line):
                return True
            todo += [k for k in c.co_consts if type(k) is type(code)]
        return False

    def watch_the_block():
        if target is None:
            return
        module = None
        for candidate in list(sys.modules.values()):
            file = getattr(candidate, "__file__", None) if candidate is not None else None
            if type(file) is str and realpath(file) == target:
                module = candidate
        if module is None:
            return
        replaced = {}
        owners = [module] + [v for v in list(vars(module).values()) if isinstance(v, type)]
        for owner in owners:
            for key, value in list(vars(owner).items()):
                kind = type(value)
                inner = value.__func__ if kind in (staticmethod, classmethod) else value
                if type(inner) is not FunctionType or not holds_block(inner):
                    continue
                new = watched(inner, module)
                replaced[id(inner)] = new
                try:  # noqa: SIM105
                    setattr(owner, key, kind(new) if kind in (staticmethod, classmethod) else new)
                except Exception:
                    pass
        main = sys.modules.get("__main__")
        if main is not None and replaced:  # `from model import f` in the script
            for key, value in list(vars(main).items()):
                if id(value) in replaced:
                    setattr(main, key, replaced[id(value)])

    # --- what a comparison is given -------------------------------------------------------
    # An array subclass decides its own comparisons: numpy's assert functions skip the
    # entries of a masked array (`np.ma.masked_all(shape)` passes assert_allclose against
    # anything), and `assertFalse` of a masked scalar passes. Every comparison the tests
    # reach (unittest's assert methods, numpy's and torch's comparisons and assert
    # functions) is wrapped, before the snapshot holds it, to fail on any array or tensor
    # that is not a plain one (a torch Parameter is plain), anywhere in its arguments.
    def refuse_array_subclasses():
        np = sys.modules.get("numpy")
        torch = sys.modules.get("torch")
        ndarray = getattr(np, "ndarray", None) if np is not None else None
        tensor = getattr(torch, "Tensor", None) if torch is not None else None
        plain_tensors = set()
        if tensor is not None:
            plain_tensors.add(tensor)
            parameters = sys.modules.get("torch.nn.parameter")
            for name in ("Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"):
                kind = getattr(parameters, name, None) if parameters is not None else None
                if isinstance(kind, type):
                    plain_tensors.add(kind)
        containers = (list, tuple)

        def odd(value, depth):
            kind = type(value)
            if ndarray is not None and kind is not ndarray and isinstance(value, ndarray):
                return kind
            if tensor is not None and kind not in plain_tensors and isinstance(value, tensor):
                return kind
            if depth < 4:
                if kind in containers:
                    items = value
                elif kind is dict:
                    items = list(value.values())
                else:
                    return None
                for item in items[:10000]:
                    found = odd(item, depth + 1)
                    if found is not None:
                        return found
            return None

        def guarded(original, failure):
            def comparison(*args, **kwargs):
                for value in (*args, *kwargs.values()):
                    found = odd(value, 0)
                    if found is not None:
                        name = getattr(found, "__qualname__", "?")
                        raise failure(
                            f"labcoat: a comparison was given a {name}, not a plain array "
                            "(an array subclass decides its own comparisons)"
                        )
                return original(*args, **kwargs)

            comparison.__name__ = getattr(original, "__name__", "comparison")
            comparison.__qualname__ = getattr(original, "__qualname__", "comparison")
            comparison.__doc__ = getattr(original, "__doc__", None)
            return comparison

        case = unittest.TestCase
        for name, value in list(vars(case).items()):
            skip = name.startswith(("assertRaises", "assertWarns", "assertLogs", "assertNoLogs"))
            if name.startswith("assert") and type(value) is FunctionType and not skip:
                setattr(case, name, guarded(value, AssertionError))
        wrapped = {}
        testing = sys.modules.get("numpy.testing")
        asserts = tuple(n for n in dir(testing) if n.startswith("assert_")) if testing else ()
        for module_name, names in (
            ("numpy", ("allclose", "isclose", "array_equal", "array_equiv")),
            ("numpy.testing", asserts),
            ("torch", ("allclose", "isclose", "equal")),
            ("torch.testing", ("assert_close", "assert_allclose")),
        ):
            module = sys.modules.get(module_name)
            if module is None:
                continue
            for name in names:
                original = getattr(module, name, None)
                if original is None or not callable(original):
                    continue
                if id(original) not in wrapped:
                    wrapped[id(original)] = guarded(original, AssertionError)
                setattr(module, name, wrapped[id(original)])

    imported_names, imported_packages = script_imports()
    refuse_array_subclasses()
    hide_answers_while_tests_run()
    scope_of_outcomes = {"builtins", "unittest", *imported_packages}
    before = snapshot()
    held_names = {(label, k): v for label, _, kept, _ in before for k, v in kept.items()}

    # --- code changed in place ------------------------------------------------------------
    # Raw memory (a numpy view of an address) rewrites a function's bytecode without
    # changing any object's identity. The interpreter's own copy of the instructions
    # (`_co_code_adaptive`, quickened as it runs) must stay what it was: the functions
    # of the modules the tests decide with, and the script's test methods as its text
    # compiles. Read before the script runs: `co_code` is a copy made on first use.
    import dis
    import opcode

    deoptop = getattr(dis, "_deoptop", None)
    caches = getattr(opcode, "_inline_cache_entries", None)

    def instructions(raw):
        """The instructions without inline caches, quickened forms mapped back."""
        out = bytearray()
        i = 0
        while i + 1 < len(raw):
            op = deoptop(raw[i])
            out += bytes((op, raw[i + 1]))
            i += 2 + 2 * caches[op]
        return bytes(out)

    def code_of(value):
        value = getattr(value, "__func__", value)
        return value.__code__ if type(value) is FunctionType else None

    def held_code(scope):
        codes = {}
        for label, _, kept, _ in before:
            if any(label == p or label.startswith(p + ".") for p in scope):
                for key, value in kept.items():
                    code = code_of(value)
                    if code is not None:
                        codes[code] = (f"{label}.{key}", code.co_code)
        return codes

    def script_code():
        """qualified name -> instructions of each function the script's text defines."""
        try:
            with open(script, encoding="utf-8") as f:
                top = compile(f.read(), script, "exec")
        except (OSError, SyntaxError, ValueError):
            return {}
        found, todo = {}, [top]
        while todo:
            code = todo.pop()
            found[code.co_qualname] = code.co_code
            todo += [c for c in code.co_consts if type(c) is type(top)]
        return found

    can_read_code = deoptop is not None and caches is not None
    can_read_code = can_read_code and hasattr(script_code.__code__, "_co_code_adaptive")
    strict_code = held_code(strict) if can_read_code else {}
    unittest_code = {c: v for c, v in strict_code.items() if v[0].startswith("unittest")}
    pristine_script = script_code() if can_read_code else {}
    verified = {}  # code -> quickened instructions found intact

    def intact(code, original):
        live = code._co_code_adaptive
        if live == original or verified.get(code) == live:
            return True
        ok = instructions(live) == instructions(original)
        if ok:
            verified[code] = live
        return ok

    def rewritten(test=None):
        """Functions whose code changed in place: unittest's and the test's own method
        (with `test`), or every function of the modules the tests decide with."""
        if not can_read_code:
            return []
        codes = unittest_code if test is not None else strict_code
        found = [f"rewrote {name} in place" for c, (name, o) in codes.items() if not intact(c, o)]
        if test is not None:
            method = getattr(type(test), getattr(test, "_testMethodName", ""), None)
            code = code_of(method)
            original = pristine_script.get(code.co_qualname) if code is not None else None
            if original is not None and not intact(code, original):
                found.append(f"rewrote {script_name}'s {code.co_qualname} in place")
        return found[:10]

    def rebound():
        """Names the script imported that are not what their module held before it ran."""
        main = hidden.get("__main__") or sys.modules.get("__main__")
        found = []
        for module, name, bound in imported_names:
            original = held_names.get((module, name), rebound)
            if original is not rebound and vars(main).get(bound, original) is not original:
                found.append(f"{script_name}'s {bound} is not {module}.{name}")
        return found

    # --- limits, threads, the script ---------------------------------------------------

    import atexit
    import random
    import resource
    import traceback

    cpu = int(cfg["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    threads = int(cfg.get("threads") or 1)
    for name in list(sys.modules):  # a paper file shadows what only labcoat loaded
        if name not in fresh_modules and name.split(".")[0] in local:
            del sys.modules[name]
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.seed()
        try:  # noqa: SIM105 - nothing more is imported into a test run than needed
            torch.set_num_threads(threads)
        except Exception:
            pass
    sys.argv = [script_name]
    if sys.path and sys.path[0] in ("", os.getcwd(), cfg["run_dir"]):
        sys.path[0] = cfg["run_dir"]
    else:
        sys.path.insert(0, cfg["run_dir"])

    exit_code = 0
    escaped = None

    def lock():
        sys.audit("labcoat.lockdown")

    finish_codes.add(lock.__code__)
    lock()
    try:
        _labcoat_run_as_main(script)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            exit_code = 0
        elif isinstance(code, int):
            exit_code = code & 0xFF
        else:
            print(code, file=sys.stderr)
            exit_code = 1
    except BaseException as exc:
        traceback.print_exc()
        exit_code = 1
        escaped = type(exc).__name__
    try:  # noqa: SIM105
        atexit._run_exitfuncs()
    except BaseException:
        pass
    restore_answers()

    # --- what the completion may have tampered with -------------------------------------

    def tampered():
        found = changed(None) + rebound() + rewritten() + script_changed()
        if target is None:
            return found

        import types

        target_name = os.path.basename(target)
        function, method = types.FunctionType, types.MethodType
        checked = {}  # co_filename -> is it the completion's file (one realpath each)

        def ours(value):
            kind = type(value)
            if kind is method:
                value = value.__func__
                kind = type(value)
            if kind is not function:
                return False
            name = value.__code__.co_filename
            if not name.endswith(target_name):
                return False
            if name not in checked:
                checked[name] = realpath(name) == target
            return checked[name]

        main = sys.modules.get("__main__")
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None) or ""
            inside = realpath(file).startswith(run_dir + os.sep) if file else False
            if module is main:
                classes = [v for v in list(vars(module).values()) if isinstance(v, type)]
                for cls in classes:
                    if issubclass(cls, unittest.TestCase):
                        for attr, value in list(vars(cls).items()):
                            if ours(value):
                                found.append(f"replaced {cls.__name__}.{attr} in {script_name}")
                continue
            is_ref = name.rsplit(".", 1)[-1].endswith("_ref")
            if inside and not is_ref:
                continue  # the paper's own modules may use the completion
            try:
                items = list(vars(module).items())
            except TypeError:
                continue
            # a reference module may import the code under test; what it defines itself
            # must stay its own
            own = defined_names(file) if is_ref else None
            for attr, value in items:
                if ours(value) and (own is None or attr in own):
                    found.append(f"replaced {name}.{attr}")
        return found[:10]

    def defined_names(file):
        import ast

        try:
            with open(file, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            return set()
        names = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return names

    for text in tampered():
        flag(text)

    def finish():
        done = {"exit_code": exit_code, "escaped": escaped, "mutated": sorted(mutated)}
        sys.audit("labcoat.report", done)

    finish_codes.add(finish.__code__)
    finish()
    return exit_code


def _labcoat_run_as_main(path):
    """Run the script as `python path` would: a fresh __main__ module, its absolute path."""
    import importlib.machinery
    import io
    import sys
    import types

    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__cached__ = None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    with io.open_code(path) as f:
        code = compile(f.read(), path, "exec")
    exec(code, main.__dict__)

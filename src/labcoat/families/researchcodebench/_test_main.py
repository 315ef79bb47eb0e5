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

The runner passes a run only with a report carrying the nonce, at least one test run,
no failure or error, and no flag; a process that ends early (`os._exit`) has no report.
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


def _labcoat_install(cfg, wrapper_codes, finish_codes):
    """Register the audit hook; only the hook ever holds the nonce and the tallies."""
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
        if frame is not None and frame.f_code.co_filename.endswith("inspect.py"):
            return frame.f_back
        return frame

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
            flag(str(args[0]))
            return
        if event == "labcoat.outcome":
            caller = getframe(2)
            if caller is None or caller.f_code not in wrapper_codes:
                flag("reported a test outcome to labcoat itself")
                return
            kind, test_id = args
            outcomes.setdefault(test_id, set()).add(kind)
            if kind == "start":
                state["ran"] += 1
            elif kind in ("failure", "error", "unexpected_success"):
                state["failures" if kind == "failure" else "errors"] += 1
            elif kind == "skip":
                state["skipped"] += 1
            elif kind == "success":
                state["ok"] += 1
            return
        if event == "labcoat.report":
            caller = getframe(2)
            if caller is None or caller.f_code not in finish_codes or state["reported"]:
                flag("sent labcoat a test report itself")
                return
            state["reported"] = True
            send("REPORT", json.dumps({**state, **args[0], "tests": len(outcomes)}))
            return
        if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
            if completion_in_stack(getframe(2)):
                flag("tried to reach the network")
            elif not network:
                where = str(args[1] if event == "socket.connect" else args[0])[:80]
                network.append(where)
                send("NETWORK", f"{event} {where}")
            return
        if watch is None:
            return
        if event == "open":
            opened = args[0]
            if isinstance(opened, bytes):
                opened = opened.decode("utf-8", "replace")
            if not isinstance(opened, str):
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
            filename = args[1] if len(args) > 1 else None
            if isinstance(filename, bytes):
                filename = filename.decode("utf-8", "replace")
            named = isinstance(filename, str) and basename(filename) == script_name
            if named and completion_in_stack(getframe(2)):
                flag(f"compiled code under the name of {script_name}")
        elif event in _INTROSPECTION:
            if on_completion(direct_caller(3)):
                flag(f"inspected the interpreter's internals ({event})")
        elif event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRS:
            if on_completion(direct_caller(3)):
                flag(f"inspected the interpreter's internals ({args[1]})")
        elif event in _CTYPES and completion_in_stack(getframe(2)):
            flag(f"used ctypes ({event})")

    sys.addaudithook(hook)


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
    _labcoat_install(cfg, wrapper_codes, finish_codes)
    script = os.path.join(cfg["run_dir"], cfg["script"])
    script_name = cfg["script"]
    run_dir = os.path.realpath(cfg["run_dir"])
    watch = cfg.get("watch")
    target = os.path.realpath(os.path.join(cfg["run_dir"], watch["file"])) if watch else None
    realpath = os.path.realpath
    unittest_files = set()

    def flag(text):
        sys.audit("labcoat.flag", text)

    # --- unittest's outcomes, counted inside the hook --------------------------------

    import unittest
    import unittest.result

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
                sys.audit("labcoat.outcome", kind, test.id())
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
        "addExpectedFailure": "success",
        "addUnexpectedSuccess": "unexpected_success",
    }
    for name, kind in kinds.items():
        setattr(unittest.result.TestResult, name, wrap(name, kind))
    original_subtest = unittest.result.TestResult.addSubTest

    def add_subtest(self, test, subtest, err):
        if err is not None and from_script(test):
            failed = issubclass(err[0], test.failureException)
            sys.audit("labcoat.outcome", "failure" if failed else "error", subtest.id())
        return original_subtest(self, test, subtest, err)

    wrapper_codes.add(add_subtest.__code__)
    unittest.result.TestResult.addSubTest = add_subtest

    def snapshot():
        out = {}
        for module in list(sys.modules.values()):
            name = getattr(module, "__name__", "")
            if name != "unittest" and not name.startswith("unittest."):
                continue
            for attr, value in list(vars(module).items()):
                out[(name, attr)] = id(value)
                if isinstance(value, type) and value.__module__ == name:
                    for key, member in list(vars(value).items()):
                        out[(f"{name}.{value.__qualname__}", key)] = id(member)
        return out

    before = snapshot()

    # --- limits, threads, the script ---------------------------------------------------

    import atexit
    import random
    import resource
    import traceback

    cpu = int(cfg["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    threads = int(cfg.get("threads") or 1)
    local = set()
    for _, dirs, files in os.walk(run_dir):
        local.update(dirs)
        local.update(f[:-3] for f in files if f.endswith(".py"))
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

    # --- what the completion may have tampered with -------------------------------------

    def tampered():
        found = []
        after = snapshot()
        for key, value in before.items():
            if after.get(key) != value:
                found.append(f"changed {key[0]}.{key[1]}")
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
        sys.audit("labcoat.report", {"exit_code": exit_code, "escaped": escaped})

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

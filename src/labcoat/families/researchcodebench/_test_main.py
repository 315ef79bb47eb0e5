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
# once the script runs: what reads the process's own memory or the harness's objects, from
# any code that is not installed (the completion can hide where its calls come from)
_LOCKED = (
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "sys._current_frames",
    "sys.settrace",
    "sys.setprofile",
    "marshal.loads",
    "marshal.load",
)
# files under /proc/<this process>/ that may be read; the rest (mem, maps, pagemap, ...)
# give away the process's memory
_PROC_SELF_OK = (
    "stat", "status", "statm", "cgroup", "limits", "cmdline", "comm", "io", "sched",
    "schedstat", "cpuset", "mountinfo", "mounts", "smaps_rollup", "oom_score_adj",
)  # fmt: skip


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

    for function in (_labcoat_install, _labcoat_run, _labcoat_run_as_main):
        collect(function.__code__)
    locked = []  # one entry once the test script is about to run
    import pathlib

    path_types = (pathlib.PosixPath, pathlib.PurePosixPath)
    with os.scandir("/") as entries:
        dir_entry = type(next(entries, None))

    def caller_name(frame):
        return frame.f_code.co_filename if frame is not None else ""

    state = {"reported": False, "ran": 0, "failures": 0, "errors": 0, "skipped": 0, "ok": 0}
    outcomes = {}
    seen_flags = set()
    network = []
    busy = []

    def plain(value):
        """Text of a value made of str, bytes, int and tuples, never running its methods."""
        kind = type(value)
        if kind is str:
            return value
        if kind is bytes:
            return value.decode("utf-8", "replace")
        if kind is int:
            return int.__repr__(value)
        if kind is tuple:
            return "(" + ", ".join(plain(v) for v in value) + ")"
        return "<object>"

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

    def installed_code(code):
        name = code.co_filename
        if type(name) is not str:
            return False
        if name.startswith("<frozen "):
            return True
        return name.startswith(installed) and not name.startswith(run_dir)

    def trusted(frame):
        """Whether `frame` runs installed code or labcoat's own (labcoat's by identity)."""
        return frame is None or frame.f_code in own_codes or installed_code(frame.f_code)

    def trusted_origin(frame, imports=False):
        """Whether what `frame` does comes from installed code on its own: past the
        installed frames (ctypes' own wrappers, numpy's), the first frame is labcoat's,
        or (`imports`) the top level of an installed module being imported (torch loading
        its libraries with ctypes). Installed code that the paper's code called is not."""
        while frame is not None:
            code = frame.f_code
            if code in own_codes:
                return True
            if not installed_code(code):
                return False
            if imports and code.co_name == "<module>":
                return True
            frame = frame.f_back
        return True

    def import_system(frame):
        """Whether `frame` is the import system's own (reading a module's cached code)."""
        name = frame.f_code.co_filename if frame is not None else None
        return type(name) is str and name.startswith("<frozen importlib")

    def proc_self_path(opened):
        """The part after /proc/<a process or thread>/ ('' for its folder), else None."""
        if not opened.startswith("/proc/"):
            return None
        first, _, part = opened[len("/proc/") :].partition("/")
        return part if first in ("self", "thread-self") or first.isdigit() else None

    def path_text(value):
        """A path argument as text, without running code the completion could define."""
        kind = type(value)
        if kind is str or kind is bytes:
            return plain(value)
        if kind is int:
            return None  # a descriptor already open
        if kind is path_types[0] or kind is path_types[1]:
            return str.__str__(os.fspath(value))
        if kind is dir_entry:
            return value.path  # a C member: a plain str
        return False  # an object of the completion's making

    def locked_open(args, caller):
        opened = args[0]
        text = path_text(opened)
        if text is None:
            return
        if text is False:  # whoever passes it on: numpy.fromfile(path) opens it too
            where = plain(caller_name(caller))
            flag(f"opened a file through an object of its own making ({where})")
            return
        # a relative path is read from the working folder (os.chdir moves it); one read
        # from a descriptor (dir_fd) needed that folder opened first, which is seen here
        absolute = text if text.startswith("/") else os.path.join(os.getcwd(), text)
        resolved = realpath(absolute)
        for candidate in (absolute, resolved):
            # os.open (mode None) of / or /proc: a descriptor that reaches /proc unseen
            if candidate.rstrip("/") in ("", "/proc") and len(args) > 1 and args[1] is None:
                flag(f"opened {candidate} as a descriptor (reaches /proc unseen)")
                return
            part = proc_self_path(candidate)
            if part is not None and part.split("/", 1)[0] not in _PROC_SELF_OK:
                flag(f"opened {candidate} (the process's own memory or its folder)")
                return
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

    def reads_memory(event, caller):
        """Whether a locked event is the paper's code reading memory or objects: the import
        system reads cached code with marshal, and an installed module being imported (torch)
        loads its libraries with ctypes."""
        if event.startswith("marshal."):
            return not import_system(caller) and not trusted_origin(caller)
        return not trusted_origin(caller, imports=event.startswith("ctypes."))

    def on_compile(args, caller):
        name = path_text(args[1]) if len(args) > 1 else None
        spoof = type(name) is str and (name.startswith(installed) or name == "<labcoat test main>")
        if spoof and not trusted(caller):
            flag(f"compiled code under the name of {name}")

    def on_locked(event, args):
        caller = getframe(3)
        if event == "code.__new__":  # libraries build code (torch, jax): only the maker counts
            if not trusted(caller):
                flag("made a code object (code.__new__)")
            return
        if event == "open" and args:
            locked_open(args, caller)
        elif event in ("exec", "compile") and not import_system(caller):
            # the completion's own call only: libraries compile strings of their own when
            # it calls them (typing's forward references, upstream's eomt, fractalgen)
            if on_completion(caller):
                flag(f"ran code made from text at run time ({event})")
            if event == "compile":
                on_compile(args, caller)
        elif event in ("os.symlink", "os.link") and args:
            target = path_text(args[0])
            if type(target) is str:
                where = realpath(os.path.join(os.getcwd(), target))
                if where.rstrip("/") in ("", "/proc") or where.startswith("/proc/"):
                    flag(f"linked to {where}")
        elif event in _LOCKED or event.startswith("ctypes."):
            if not reads_memory(event, caller):
                return
            flag(f"read the interpreter's memory or objects ({event})")

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
                for text in changed(scope_of_outcomes) + rebound() + rewritten(test):
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

    imported_names, imported_packages = script_imports()
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
        main = sys.modules.get("__main__")
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

    # --- what the completion may have tampered with -------------------------------------

    def tampered():
        found = changed(None) + rebound() + rewritten()
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

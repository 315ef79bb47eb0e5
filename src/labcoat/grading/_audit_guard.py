"""The in-sandbox Python guard: one source for every process that runs agent code and decides.

PaperBench's `python` checks (`families/paperbench/_python_check.py`) and ResearchCodeBench's
test runs (`families/researchcodebench/_test_main.py`) run code written by the agent in the
process whose outcome is graded, under an audit hook (`sys.addaudithook`). What that hook
refuses as a read of the process's own memory or objects is decided here, once, and both
embed this function's text (`GUARD_SOURCE`): two copies had drifted apart before (one let
`/proc` in as a directory descriptor and then `self/maps`).

`_labcoat_memory_guard(installed, outside, own_codes)` returns `(check, tools)`:

- `check(event, args, caller)`: why an audit event, raised by code whose frame is `caller`,
  reads the process's memory or the interpreter's objects, or None. Refused, from any code
  that is not installed (or installed code that such code called): the garbage
  collector's object lists, `sys._current_frames`, `sys.settrace`/`setprofile`, marshal
  outside the import system, ctypes (but an installed module's own use while it is
  imported), a new code object, and opening `/proc/<this process>/` beyond a short list of
  plain files (`stat`, `status`, `limits`, ...), `/` or `/proc` as a descriptor (which
  reaches `/proc` unseen, through `dir_fd`), a path given as an object of the agent's own
  making, and links to `/proc`.
- `tools`: the helpers the families build their own rules on (`trusted`, `trusted_origin`,
  `installed_code`, `import_system`, `path_text`, `plain`).

`installed`: folder prefixes of installed code (the interpreter's, read-only packages);
`outside`: the prefix of the agent's folder, never installed; `own_codes`: the code
objects of the harness's own frames (a set, filled by the caller).

What it cannot stop: memory read without an audit event (a numpy view of a raw address, a
ctypes pointer made from a plain integer); a hook cannot be a sandbox against its own process.
"""

from __future__ import annotations

import inspect


def _labcoat_memory_guard(installed, outside, own_codes):
    import os
    import pathlib

    realpath, getcwd = os.path.realpath, os.getcwd
    # files under /proc/<this process>/ that may be read; the rest (mem, maps, pagemap,
    # task, fd, environ, ...) give away the process's memory or its descriptors
    proc_self_ok = (
        "stat", "status", "statm", "cgroup", "limits", "cmdline", "comm", "io", "sched",
        "schedstat", "cpuset", "mountinfo", "mounts", "smaps_rollup", "oom_score_adj",
    )  # fmt: skip
    locked = (
        "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames",
        "sys.settrace", "sys.setprofile", "marshal.loads", "marshal.load",
    )  # fmt: skip
    path_types = (pathlib.PosixPath, pathlib.PurePosixPath)
    with os.scandir("/") as entries:
        dir_entry = type(next(entries, None))

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

    def installed_code(code):
        name = code.co_filename
        if type(name) is not str:
            return False
        if name.startswith("<frozen "):
            return True
        return name.startswith(installed) and not name.startswith(outside)

    def trusted(frame):
        """Whether `frame` runs installed code or the harness's own (by identity)."""
        return frame is None or frame.f_code in own_codes or installed_code(frame.f_code)

    def trusted_origin(frame, imports=False):
        """Whether what `frame` does comes from installed code on its own: past the
        installed frames, the first frame is the harness's, or (`imports`) the top level of
        an installed module being imported (torch loading its libraries with ctypes).
        Installed code that the agent's code called is not."""
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

    def path_text(value):
        """A path argument as text, without running code the agent could define: None for
        a descriptor already open, False for an object of the agent's own making."""
        kind = type(value)
        if kind is str or kind is bytes:
            return plain(value)
        if kind is int:
            return None
        if kind is path_types[0] or kind is path_types[1]:
            return str.__str__(os.fspath(value))
        if kind is dir_entry:
            return value.path  # a C member: a plain str
        return False

    def proc_self_part(opened):
        """The part after /proc/<a process or thread>/ ('' for its folder), else None."""
        if not opened.startswith("/proc/"):
            return None
        first, _, part = opened[len("/proc/") :].partition("/")
        return part if first in ("self", "thread-self") or first.isdigit() else None

    def open_reason(args, caller):
        text = path_text(args[0])
        if text is None:
            return None
        if text is False:  # whoever passes it on: numpy.fromfile(path) opens it too
            return f"opened a file through an object of its own making ({plain(_name(caller))})"
        # a relative path is read from the working folder (os.chdir moves it); one read
        # from a descriptor (dir_fd) needed that folder opened first, which is seen here
        absolute = text if text.startswith("/") else os.path.join(getcwd(), text)
        for candidate in (absolute, realpath(absolute)):
            # os.open (mode None) of / or /proc: a descriptor that reaches /proc unseen
            if candidate.rstrip("/") in ("", "/proc") and len(args) > 1 and args[1] is None:
                return f"opened {candidate} as a descriptor (reaches /proc unseen)"
            part = proc_self_part(candidate)
            if part is not None and part.split("/", 1)[0] not in proc_self_ok:
                return f"opened {candidate} (the process's own memory or its folder)"
        return None

    def _name(frame):
        return frame.f_code.co_filename if frame is not None else ""

    def check(event, args, caller):
        if event == "code.__new__":  # libraries build code (torch, jax): only the maker counts
            return None if trusted(caller) else "made a code object (code.__new__)"
        if event == "open":
            return open_reason(args, caller) if args else None
        if event in ("os.symlink", "os.link"):
            target = path_text(args[0]) if args else None
            if type(target) is str:
                where = realpath(os.path.join(getcwd(), target))
                if where.rstrip("/") in ("", "/proc") or where.startswith("/proc/"):
                    return f"linked to {where}"
            return None
        if event.startswith("marshal."):  # the import system reads cached code with it
            if import_system(caller) or trusted_origin(caller):
                return None
        elif event in locked or event.startswith("ctypes."):
            if trusted_origin(caller, imports=event.startswith("ctypes.")):
                return None
        else:
            return None
        return f"read the interpreter's memory or objects ({event})"

    tools = {
        "plain": plain,
        "installed_code": installed_code,
        "trusted": trusted,
        "trusted_origin": trusted_origin,
        "import_system": import_system,
        "path_text": path_text,
    }
    return check, tools


GUARD_SOURCE = inspect.getsource(_labcoat_memory_guard)
"""The guard's text, put ahead of the in-sandbox scripts that install it."""

"""`python` checks: a check's Python code run so that the submission cannot pass it by leaving.

A `command` check passes on its exit status alone, so a package that calls `sys.exit(0)` or
`os._exit(0)` when imported passes every `python3 -c 'import pkg; assert ...'` check without a
line of method code. A `python` check closes that hole and three more:

- **Completion token.** The judge draws a random token per run and sends it on standard input
  ahead of the check's code. The bootstrap below reads both before anything of the submission
  is imported (so the submission cannot read them from stdin, the environment or the command
  line), runs the code, and prints the token only after the code ran to its end. The check
  passes only when the token is the last line of the output and the exit status is 0: an
  early `sys.exit`, `os._exit` or a crash at import fails it.
- **Installed packages first.** `python3 -I` does not put the submission's folder on the path;
  the bootstrap appends it *after* the installed packages, so a `numpy/` folder in the
  submission cannot stand in for numpy.
- **No patching.** Before the check runs, every module then loaded (numpy and all its
  submodules, the builtins, the standard library) is held by identity: its functions and
  classes, and each class's own members. A change anywhere fails the check
  (`numpy.allclose = lambda *a, **k: True`, `isclose` swapped inside `numpy._core.numeric`,
  a callable object in place of a function).
- **No reading of the token.** It lives only in an audit hook's closure: never on the stack
  while the submission's code runs, and the bootstrap's own names leave `__main__` before
  the check starts. The garbage collector's object lists, `sys._current_frames`, ctypes
  (but an installed module's own use while it is imported), new code objects,
  `sys.settrace`, `/proc/self/` beyond its plain files (`mem`, `maps`, ...) and `/` or
  `/proc` opened as a descriptor fail the check, and only the bootstrap's own frame (that
  frame, not a copy of its code) can have the token printed. These rules are
  ResearchCodeBench's too: one source, `labcoat/grading/_audit_guard.py`, put ahead of the
  bootstrap's text.

What it cannot stop: ctypes pointers made from plain integers read memory without an
audit event, so code that scans the heap for the token that way is not caught here (it is
written to attack labcoat, and plain to a reader of the submission); a check cannot be a
sandbox against its own process. See docs/paperbench.md, "What the check judge can catch".
"""

from __future__ import annotations

import secrets

from labcoat.families.paperbench._commands import CommandResult
from labcoat.grading._audit_guard import GUARD_SOURCE

# Run as `python3 -I -c BOOTSTRAP`; stdin holds the token's line, then the check's code.
# The token lives only in the guard's closure (an audit hook: never on the stack while the
# submission's code runs); the bootstrap's names leave __main__ before the check starts.
_BOOTSTRAP = r"""

def _labcoat_check():
    import builtins, os, sys
    data = sys.stdin.read()
    token, _, code = data.partition("\n")
    del data
    sys.stdin = open(os.devnull)
    sys.path.append(os.getcwd())
    try:
        import numpy
    except ImportError:
        pass
    sys.addaudithook(_labcoat_guard(token, sys._getframe(0)))
    del token
    globals().pop("_labcoat_guard")
    globals().pop("_labcoat_check")
    globals().pop("_labcoat_memory_guard")
    ns = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(code, "<check>", "exec"), ns)
    except SystemExit as ex:
        sys.stdout.flush()
        sys.stderr.write(f"labcoat: the check stopped before its end: SystemExit({ex.code!r})\n")
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.flush()
    sys.audit("labcoat.done")  # the guard prints the token, or says why not and exits
    os._exit(0)


def _labcoat_guard(token, bootstrap):
    import os, sys, sysconfig
    realpath = os.path.realpath
    submission = realpath(os.getcwd()) + os.sep
    paths = sysconfig.get_paths()
    installed = tuple(
        realpath(paths[k]) + os.sep
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
        if paths.get(k)
    )
    held = []  # every module loaded now, held by identity: its callables, its classes' members
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if module is None or name == "__main__" or realpath(file).startswith(submission):
            continue
        try:
            kept = {k: v for k, v in dict(vars(module)).items() if callable(v)}
        except TypeError:
            continue
        held.append((name, module, kept))
        for value in kept.values():
            if isinstance(value, type) and value.__module__ == name:
                held.append((f"{name}.{value.__qualname__}", value, dict(vars(value))))
    own = {bootstrap.f_code, sys._getframe(0).f_code}
    # the memory and /proc rules: one source with ResearchCodeBench's test runs
    # (labcoat/grading/_audit_guard.py, put ahead of this text)
    memory_check, _ = _labcoat_memory_guard(installed, submission, own)
    getframe, write = sys._getframe, os.write
    busy = []

    def fail(why):
        write(2, f"labcoat: {why}\n".encode())
        os._exit(4)

    def taint(what):  # at once: the read it announces has not happened yet
        fail(f"refused during the check: the code {what}")

    def finish():
        changed = []
        for label, owner, kept in held:
            now = vars(owner)
            changed += [f"{label}.{k}" for k, v in kept.items() if now.get(k, held) is not v]
        if changed:
            fail(f"patched during the check: {', '.join(changed[:5])}")
        write(1, ("\n" + token + "\n").encode())

    def hook(event, args):
        if busy:
            return
        busy.append(1)
        try:
            caller = getframe(1)
            if event == "labcoat.done":
                if caller is bootstrap:  # this very frame, not a copy of its code
                    finish()
            else:
                why = memory_check(event, args, caller)
                if why is not None:
                    taint(why)
        finally:
            busy.pop()

    return hook


_labcoat_check()
"""
BOOTSTRAP = GUARD_SOURCE + _BOOTSTRAP

STOPPED_EARLY = 3
PATCHED = 4


def new_token() -> str:
    return f"labcoat-check-done-{secrets.token_hex(16)}"


def python_command(code: str, token: str) -> str:
    """The bash command that runs `code` under the bootstrap with `token` on stdin."""
    delimiter = f"LABCOAT_CHECK_{secrets.token_hex(8)}"
    bootstrap = BOOTSTRAP.replace("'", "'\"'\"'")
    return f"python3 -I -c '{bootstrap}' <<'{delimiter}'\n{token}\n{code}\n{delimiter}\n"


def verdict(result: CommandResult, token: str) -> tuple[bool, str]:
    """(passed, why) for a python check's run."""
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    finished = bool(lines) and lines[-1].strip() == token
    if result.timed_out:
        return False, "timed out"
    if result.exit_code == STOPPED_EARLY or result.exit_code == PATCHED:
        return False, _last_line(result.stderr) or f"exited {result.exit_code}"
    if result.exit_code != 0:
        return False, f"raised or exited {result.exit_code}: {_last_line(result.stderr)}"
    if not finished:
        return False, (
            "exited 0 before the check's code ran to its end (no completion token): "
            "the submission's code left the process early"
        )
    return True, "ran to its end"


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""

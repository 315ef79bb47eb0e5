"""`python` checks: a check's Python code run so that the submission cannot pass it by leaving.

A `command` check passes on its exit status alone, so a package that calls `sys.exit(0)` or
`os._exit(0)` when imported passes every `python3 -c 'import pkg; assert ...'` check without a
line of method code. A `python` check closes that hole and two more:

- **Completion token.** The judge draws a random token per run and sends it on standard input
  ahead of the check's code. The bootstrap below reads both before anything of the submission
  is imported (so the submission cannot read them from stdin, the environment or the command
  line), runs the code, and prints the token only after the code ran to its end. The check
  passes only when the token is the last line of the output and the exit status is 0: an
  early `sys.exit`, `os._exit` or a crash at import fails it.
- **Installed packages first.** `python3 -I` does not put the submission's folder on the path;
  the bootstrap appends it *after* the installed packages, so a `numpy/` folder in the
  submission cannot stand in for numpy.
- **No patching.** The bootstrap imports numpy (when installed) before the check runs and
  fails the check if the check's run replaced any of numpy's or the builtins' top-level names
  (`numpy.allclose = lambda *a, **k: True`).

What it cannot stop: code that runs inside the check's own process can, with effort aimed at
labcoat, read the token from the bootstrap's memory (its frames or the garbage collector) and
print it, or patch deeper modules (`numpy.testing`, `numpy.linalg`). Such code is written to
attack the grader and is visible to any reader of the submission; a check cannot be a
sandbox against its own process. See docs/paperbench.md, "What the check judge can catch".
"""

from __future__ import annotations

import secrets

from labcoat.families.paperbench._commands import CommandResult

# Run as `python3 -I -c BOOTSTRAP`; stdin holds the token's line, then the check's code.
BOOTSTRAP = r"""
import builtins, os, sys
_data = sys.stdin.read()
_token, _, _code = _data.partition("\n")
del _data
sys.stdin = open(os.devnull)
sys.path.append(os.getcwd())
_guarded = {"builtins": builtins}
try:
    import numpy
    _guarded["numpy"] = numpy
except ImportError:
    pass
_before = {n: dict(vars(m)) for n, m in _guarded.items()}
_ns = {"__name__": "__main__", "__builtins__": builtins}
try:
    exec(compile(_code, "<check>", "exec"), _ns)
except SystemExit as _ex:
    sys.stdout.flush()
    sys.stderr.write(f"labcoat: the check stopped before its end: SystemExit({_ex.code!r})\n")
    sys.stderr.flush()
    os._exit(3)
for _name, _module in _guarded.items():
    _now = vars(_module)
    _changed = sorted(k for k, v in _before[_name].items() if _now.get(k) is not v)
    if _changed:
        sys.stdout.flush()
        _shown = ", ".join(_changed[:5])
        sys.stderr.write(f"labcoat: {_name} was patched during the check: {_shown}\n")
        sys.stderr.flush()
        os._exit(4)
sys.stdout.flush()
sys.stdout.write("\n" + _token + "\n")
sys.stdout.flush()
os._exit(0)
"""

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

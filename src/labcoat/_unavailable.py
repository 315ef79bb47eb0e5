"""One notion of "cannot run here", shared by every table, the report and exit codes.

A family that finds this machine cannot give a sample what it needs (its GPUs, a
secret, a Python environment that cannot be built offline, the network its tests
download from) raises `unavailable(reason)` before anything runs. Inspect records the
sample as errored with that message; every reader of the logs asks `reason_of` instead.
Such a sample is no run of its task: not an error, in no mean, counted apart and listed
as `cannot run here: <reason>`. Another machine (with the GPU, the secret) runs it.
"""

from __future__ import annotations

import re

from labcoat._errors import LabcoatError

PREFIX = "environment unavailable:"
"""How the error of a sample that cannot run here begins (in the logs, in messages)."""
LABEL = "cannot run here"
"""How the tables, the report and the analysis show such a sample."""
RULE = f"runs that {LABEL} (no GPU, secret or environment for them) are in no mean"
"""The rule as the tables' captions state it."""
EXIT_NOTHING_RAN = 3
"""The exit code of `eval` and `validate` when nothing failed because nothing could run
here: every selected task needs what this machine lacks (docs/cli.md)."""

_REPR = re.compile(r"^[A-Za-z_][\w.]*\((['\"])(.*)\1\)$", re.DOTALL)


def unavailable(reason: str) -> LabcoatError:
    """The error a family raises for a sample that cannot run on this machine."""
    return LabcoatError(f"{PREFIX} {reason}")


def unwrapped(message: str) -> str:
    """An error message as its exception said it: Inspect records some errors as their
    repr, `Name("message")`, with the quotes escaped."""
    text = message.strip()
    wrapped = _REPR.match(text)
    if wrapped:
        text = wrapped.group(2).replace(f"\\{wrapped.group(1)}", wrapped.group(1)).strip()
    return text


def reason_of(message: str | None) -> str | None:
    """Why a sample could not run here, from its recorded error (None: it could, or it
    errored for another reason). One line, the prefix left out.

    Only an error that *is* labcoat's `unavailable(...)` counts: its message (or
    Inspect's repr of it) begins with the prefix. A message that merely contains it (a
    grader's error quoting what the agent's code printed) is an error like any other:
    else an agent could turn its failed run into no run by printing the prefix."""
    if not message:
        return None
    text = unwrapped(message)
    if not text.startswith(PREFIX):
        return None
    line = text.splitlines()[0]
    return line.removeprefix(PREFIX).strip() or "no reason given"


def label(reason: str) -> str:
    """`cannot run here: <reason>`, as every table shows it."""
    return f"{LABEL}: {reason}"

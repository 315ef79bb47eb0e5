"""The pip that resolves task environments (labcoat's own, mounted into build sandboxes),
and what it can enforce.

An environment pinned to a date (`PythonEnv.uploaded_prior_to`: resolve as of then) needs
a pip with `--uploaded-prior-to`; an older pip would ignore a date given as a variable and
resolve to today's releases, so such an environment is refused with the reason instead.
Everything that changes what pip resolves (its version, the host's pip settings) is part
of each environment's key: another pip builds another environment.
"""

from __future__ import annotations

import functools
import importlib.metadata as md
import subprocess
import sys
from dataclasses import dataclass

from labcoat.sandbox._pip_config import host_pip_config

DATE_OPTION = "--uploaded-prior-to"


@dataclass(frozen=True)
class Resolver:
    pip_version: str
    honours_dates: bool
    """Whether this pip has `--uploaded-prior-to`."""

    def describe(self) -> str:
        dates = "resolves as of a date" if self.honours_dates else "cannot resolve as of a date"
        return f"pip {self.pip_version} ({dates})"


@functools.cache
def resolver() -> Resolver:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Resolver(md.version("pip"), DATE_OPTION in done.stdout)


def date_refusal(date: str) -> str | None:
    """Why an environment resolved as of `date` cannot be built here, or None."""
    found = resolver()
    if found.honours_dates:
        return None
    return (
        f"resolving as of {date} needs pip with {DATE_OPTION}; labcoat's pip is "
        f"{found.pip_version} (upgrade it: {sys.executable} -m pip install -U pip)"
    )


def resolution_key() -> str:
    """What changes resolution besides the requirement lines: pip's version, its settings."""
    settings = sorted(host_pip_config().variables.items())
    return f"pip {resolver().pip_version} " + " ".join(f"{k}={v}" for k, v in settings)

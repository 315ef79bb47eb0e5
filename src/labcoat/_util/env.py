"""labcoat's typed environment variables: read in one way, checked before a run starts.

A variable that is set to something its reader cannot use (`LABCOAT_GPUS=two`) is a
LabcoatError naming the variable and the values it accepts, at the start of every
command (`check_environment`) and wherever it is read; never a traceback mid-run.
An empty value counts as unset.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from labcoat._errors import LabcoatError
from labcoat._util.limits import quoted

T = TypeVar("T")


@dataclass(frozen=True)
class EnvVar:
    name: str
    accepts: str
    """What it takes, for the error line (`a number of seconds > 0`)."""
    parse: Callable[[str], Any]
    """The value of a set variable; raises ValueError when the text is not one."""


def _positive_number(text: str) -> float:
    number = float(text)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(text)
    return number


def _whole(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit():  # no sign, no fraction, no "1e3"
            raise ValueError(text)
        number = int(text)
        if number < minimum:
            raise ValueError(text)
        return number

    return parse


def _choice(*values: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.lower()
        if value not in values:
            raise ValueError(text)
        return value

    return parse


def _matching(pattern: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not re.fullmatch(pattern, text):
            raise ValueError(text)
        return text

    return parse


_FLAG = "1 or 0"
VARIABLES: dict[str, EnvVar] = {
    v.name: v
    for v in (
        EnvVar("LABCOAT_TASK_OPERATION_TIMEOUT", "a number of seconds > 0", _positive_number),
        EnvVar("LABCOAT_ENV_BUILD_TIMEOUT", "a whole number of seconds >= 1", _whole(1)),
        EnvVar("LABCOAT_MAX_RUN_SAMPLES", "a whole number >= 1", _whole(1)),
        EnvVar("LABCOAT_GPUS", "a whole number of GPUs (0 for none)", _whole(0)),
        EnvVar(
            "LABCOAT_SANDBOX_DISK",
            "one of auto, loop, fuse, watch, off",
            _choice("auto", "loop", "fuse", "watch", "off"),
        ),
        EnvVar(
            "LABCOAT_SANDBOX_MODE",
            "one of auto, root, separate-users, one-user",
            _choice("auto", "root", "separate-users", "one-user"),
        ),
        EnvVar("LABCOAT_SEARCH_PROVIDER", "searxng:URL or tavily", _matching(r"tavily|searxng:.+")),
        EnvVar("LABCOAT_DEBUG", _FLAG, _choice("1", "0")),
        EnvVar("LABCOAT_KEEP_SANDBOXES", _FLAG, _choice("1", "0")),
        EnvVar("LABCOAT_SANDBOX_USERNS", _FLAG, _choice("1", "0")),
        EnvVar("LABCOAT_SANDBOX_CGROUPS", _FLAG, _choice("1", "0")),
        EnvVar("LABCOAT_ANY_GPU_MODEL", _FLAG, _choice("1", "0")),
        # kept final workspaces (docs/regrade.md)
        EnvVar("LABCOAT_KEEP_WORKSPACES", _FLAG, _choice("1", "0")),
        EnvVar("LABCOAT_KEEP_FILE_MB", "a number of megabytes > 0", _positive_number),
        EnvVar("LABCOAT_KEEP_SAMPLE_MB", "a number of megabytes > 0", _positive_number),
    )
}


def env_value(name: str, default: T) -> Any | T:
    """The parsed value of variable `name` (one of VARIABLES), or `default` when it is
    unset or empty; a value it cannot take is a LabcoatError naming it."""
    variable = VARIABLES[name]
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return variable.parse(text)
    except ValueError:
        raise LabcoatError(
            f"environment variable {name}={quoted(text)}: expected {variable.accepts}"
        ) from None


def check_environment() -> None:
    """Every typed variable that is set can be read (called as a command starts)."""
    for name in VARIABLES:
        env_value(name, None)

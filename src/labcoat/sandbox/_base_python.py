"""An existing interpreter or venv whose packages every task environment sees (air-gapped
GPU machines keep torch preinstalled there, with no index to install it from).

`LABCOAT_TASK_PYTHON=/opt/venv/bin/python` (or `--python`): each task environment gets a
`.pth` file naming that interpreter's site-packages, so its packages import and pip counts
them as installed; sandboxes see those folders read-only at the same paths. The
interpreter must be the Python version labcoat runs on (compiled packages are built for
one version).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

from labcoat._errors import LabcoatError
from labcoat._util.run_choices import TASK_PYTHON_ENV as TASK_PYTHON_ENV  # its name here
from labcoat._util.run_choices import current_choices

PTH_FILE = "labcoat-task-python.pth"
_ASK = (
    "import json, site, sys; "
    "print(json.dumps([list(sys.version_info[:2]), site.getsitepackages()]))"
)


def task_python_paths(python: str | None = None) -> tuple[str, ...]:
    """The site-packages folders of `python` (default: the run's `--python`, see
    `labcoat._util.run_choices`), or none when it is not set."""
    python = (python or current_choices().task_python or "").strip()
    return _site_packages(python) if python else ()


@functools.cache
def _site_packages(python: str) -> tuple[str, ...]:
    where = f"{TASK_PYTHON_ENV}={python}"
    try:
        done = subprocess.run(
            [python, "-I", "-c", _ASK], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        raise LabcoatError(f"{where}: cannot run it ({ex})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise LabcoatError(f"{where}: it failed ({last})")
    version, folders = json.loads(done.stdout)
    ours = list(sys.version_info[:2])
    if version != ours:
        raise LabcoatError(
            f"{where} is Python {'.'.join(map(str, version))}; labcoat runs on Python "
            f"{'.'.join(map(str, ours))}, and task environments need the same version "
            "(install labcoat with that interpreter)"
        )
    return tuple(f for f in folders if os.path.isdir(f))

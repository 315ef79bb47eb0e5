"""Importing this module runs the bench script again with the checkout's .venv Python.

`python3 bench/x.py` from a shell whose Python is not the venv's would otherwise stop at
`No module named 'anyio'`: the scripts need labcoat and its dependencies, which live in
.venv (made by `./labcoat`). Import it before any third-party import. It does nothing when
the script already runs in .venv or in another environment that has labcoat installed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

_VENV = Path(__file__).resolve().parents[1] / ".venv"
_ONCE = "LABCOAT_BENCH_IN_VENV"


def _rerun_in_venv() -> None:
    if Path(sys.prefix).resolve() == _VENV.resolve():
        return
    python = _VENV / "bin" / "python"
    # once only: a .venv whose python is not a venv's must not loop
    if python.exists() and not os.environ.get(_ONCE):
        os.environ[_ONCE] = "1"
        # exec keeps the process, its arguments and its exit code: the same command
        os.execv(python, [str(python), *sys.argv])
    if importlib.util.find_spec("labcoat") is None:
        script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "this script"
        sys.exit(
            f"{script}: labcoat is not installed for {sys.executable} and {_VENV} does not "
            "exist: run ./labcoat --version once (it makes .venv), then run this again"
        )


_rerun_in_venv()

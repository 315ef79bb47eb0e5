"""The bench scripts run as the docs write them, from any Python 3 of the machine.

`python3 bench/judge_cost.py` from a shell without the venv stopped at `No module named
'anyio'`; each script now runs itself again with the checkout's .venv Python
(bench/_checkout_venv.py). Every script that imports the venv's packages must import it;
one script's `--help` (the one the issue names; they share the module) is run by the
venv's base interpreter with `-S` (no site-packages: neither labcoat nor anyio
importable), as a bare shell's `python3` would be.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def test_every_script_that_needs_the_venv_imports_the_re_exec() -> None:
    # a script with a third-party import but no re-exec would fail from a bare python3
    for path in sorted((ROOT / "bench").glob("*.py")):
        text = path.read_text()
        needs = any(
            f"\nimport {m}" in text or f"\nfrom {m}" in text
            for m in ("anyio", "labcoat", "ray", "inspect_ai")
        )
        if needs:
            assert "import _checkout_venv" in text, (
                f"{path.name} imports the venv's packages without bench/_checkout_venv"
            )


def test_a_bench_script_runs_from_a_python_without_the_venv() -> None:
    bare = subprocess.run([BASE_PYTHON, "-S", "-c", "import anyio"], capture_output=True)
    assert bare.returncode != 0, (
        "the base interpreter must lack anyio for this test to mean anything"
    )
    done = subprocess.run(
        [BASE_PYTHON, "-S", "bench/judge_cost.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:500]

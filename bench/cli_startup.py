"""How long the `labcoat` command takes to start, from a checkout whose .venv is ready.

    python bench/cli_startup.py

Prints the median wall time of `./labcoat --version` (the checkout's launcher: a check
that .venv is installed, then an exec), `.venv/bin/labcoat --version` and `--help`
(commands are imported lazily), and `labcoat list mini` (which imports Inspect).
Figures, not limits: nothing here asserts a time.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 7


def median_seconds(argv: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    venv_labcoat = str(ROOT / ".venv" / "bin" / "labcoat")
    if not Path(venv_labcoat).exists():
        sys.exit("run ./labcoat once first (it creates .venv)")
    subprocess.run([str(ROOT / "labcoat"), "--version"], cwd=ROOT, capture_output=True)
    cases = {
        "./labcoat --version": [str(ROOT / "labcoat"), "--version"],
        ".venv/bin/labcoat --version": [venv_labcoat, "--version"],
        ".venv/bin/labcoat --help": [venv_labcoat, "--help"],
        ".venv/bin/labcoat list mini": [venv_labcoat, "list", "mini"],
    }
    for name, argv in cases.items():
        print(f"{name:32s} {median_seconds(argv):6.3f} s (median of {RUNS})")


if __name__ == "__main__":
    main()

"""The grader's own truth: sidecar code run against the paper's reference implementation.

A check whose expected value is computed in the process that runs the submission's code is
a check the submission can answer for itself: it can read the caller's frame (`want`, the
check's variables), the environment (a check seed), the files the check reads, or simply
recognise the check's inputs (a fixed `default_rng(0)`, the first row of a paper's data
stream) and return what the check expects. So every expected value here comes from the
paper's `reference_submission/`, run by the harness in a process of its own that imports
no code of the submission and is never in any sandbox the submission's code runs in:

- A `python` check with `compare:` runs its code twice on the same fresh inputs (`rng`, a
  generator seeded by a draw made at grading time, never a fixed seed): once in the
  grader's sandbox on the submission, once here on the reference. Each run leaves a
  `result` (numbers, lists, dicts of them); the judge compares the two, so what decides is
  the reference's value, and the submission only ever sees inputs it has never seen before.
- A `rerun.recompute` check runs only here: it reads the reproductions' claimed results as
  text (the judge reads them, the submission's code is not run) and recomputes the values
  of the seeds drawn at grading time with the reference. The drawn seeds exist only in this
  process and in the judge.

The reference is trusted (task authors are, docs/integrity.md); the claimed results it
reads are only parsed as JSON. `run_reference` needs numpy in the harness's interpreter
(labcoat depends on it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import secrets
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The line that carries a run's `result`, on both sides. On the submission's side the
# submission could print one itself: that only changes its own answer, never the expected one.
RESULT_MARK = "labcoat-result:"

# Appended to a compare check's code (both sides): the result as plain floats, one line.
# `numpy.asarray(..., dtype=float)` turns array subclasses and objects with `__array__` into
# plain arrays of the numbers they hold.
RESULT_TRAILER = f"""
def _labcoat_plain(value):
    import numpy
    if isinstance(value, dict):
        return {{str(k): _labcoat_plain(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return [_labcoat_plain(v) for v in value]
    return numpy.asarray(value, dtype=float).tolist()
import json as _labcoat_json
print("\\n{RESULT_MARK}" + _labcoat_json.dumps(_labcoat_plain(result)), flush=True)
"""


def rng_preamble(seed: int) -> str:
    """The code that gives a compare check its fresh inputs: `rng`, seeded by `seed`."""
    return (
        "import numpy as _labcoat_np\n"
        f"rng = _labcoat_np.random.default_rng({seed})\n"
        "del _labcoat_np\n"
    )


def new_input_seed() -> int:
    """A fresh seed for one check's inputs: from the OS's randomness, drawn at grading time."""
    return secrets.randbelow(2**63)


# Run as `python -I -B -c REFERENCE_BOOT` in the reference's folder; stdin holds a JSON
# object: `code`, and `variables` for the code's namespace.
REFERENCE_BOOT = r"""
import json, os, sys
payload = json.loads(sys.stdin.read())
sys.stdin = open(os.devnull)
sys.path.insert(0, os.getcwd())
ns = {"__name__": "__main__", **payload["variables"]}
exec(compile(payload["code"], "<reference>", "exec"), ns)
"""


@dataclass(frozen=True)
class ReferenceRun:
    """What the reference's run of a check gave: its `result` (None without one), or why
    it failed (`error`: the last line of its error output)."""

    result: Any = None
    error: str | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


async def run_reference(
    reference: Path, code: str, variables: Mapping[str, Any], timeout: float
) -> ReferenceRun:
    """Run sidecar `code` on the paper's reference implementation, in a process of its own.

    Args:
        reference: the paper's `reference_submission/` (its folder is the code's cwd and
            first on `sys.path`; nothing is written there).
        code: the check's code; it may set `result`, printed by `RESULT_TRAILER` when the
            code includes it.
        variables: JSON-able names set in the code's namespace before it runs.
        timeout: seconds before the process group is killed.

    Returns:
        The run's `result` (the last `RESULT_MARK` line), or its error.
    """
    payload = json.dumps({"code": code, "variables": dict(variables)})
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-B",
        "-c",
        REFERENCE_BOOT,
        cwd=reference,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(payload.encode()), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return ReferenceRun(timed_out=True, error=f"the reference timed out after {timeout:g}s")
    if proc.returncode != 0:
        lines = [ln for ln in err.decode(errors="replace").splitlines() if ln.strip()]
        return ReferenceRun(error=lines[-1][:500] if lines else f"exited {proc.returncode}")
    result, found = parse_result(out.decode(errors="replace"))
    return ReferenceRun(result if found else None)


def parse_result(stdout: str) -> tuple[Any, bool]:
    """(result, found): the last `RESULT_MARK` line's JSON."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                return json.loads(line[len(RESULT_MARK) :]), True
            except json.JSONDecodeError:
                return None, False
    return None, False


@dataclass(frozen=True)
class Tolerance:
    """`numpy.allclose`'s: |got - expected| <= atol + rtol * |expected|, elementwise."""

    rtol: float = 1e-9
    atol: float = 1e-12


def compare_results(got: Any, expected: Any, tol: Tolerance, where: str = "result") -> str | None:
    """None when `got` is `expected` within `tol` (same keys, same shapes); else why not.

    `expected` is the reference's; `got` is whatever the submission's run printed."""
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            got_keys = sorted(got) if isinstance(got, dict) else type(got).__name__
            return f"{where}: keys {got_keys}, expected {sorted(expected)}"
        for key in expected:
            why = compare_results(got[key], expected[key], tol, f"{where}[{key!r}]")
            if why:
                return why
        return None
    if isinstance(expected, list) and any(isinstance(e, dict | list) for e in expected):
        if not isinstance(got, list) or len(got) != len(expected):
            return f"{where}: not a list of {len(expected)}"
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            why = compare_results(a, b, tol, f"{where}[{i}]")
            if why:
                return why
        return None
    import numpy as np

    try:
        want = np.asarray(expected, dtype=float)
        have = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return f"{where}: not numbers of the expected shape"
    if have.shape != want.shape:
        return f"{where}: shape {have.shape}, expected {want.shape}"
    close = np.isclose(have, want, rtol=tol.rtol, atol=tol.atol, equal_nan=False)
    if bool(np.all(close)):
        return None
    first = tuple(int(j) for j in np.argwhere(~close)[0])
    at = f"{where}{list(first) if first else ''}"
    return f"{at} = {_num(have[first])}, the reference gives {_num(want[first])}"


def _num(x: Any) -> str:
    x = float(x)
    return repr(x) if not math.isfinite(x) else f"{x:.6g}"

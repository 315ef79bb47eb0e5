"""Student's t quantile for whole degrees of freedom, for confidence intervals.

labcoat has no scipy (a heavy dependency for one function), so the t distribution is
computed here exactly: for whole ν its CDF is a finite sum (Abramowitz & Stegun 26.7.3
and 26.7.4), and the quantile is found by bisection on it. Checked against printed
tables in tests/analysis/test_errorbars.py.
"""

from __future__ import annotations

import math


def t_cdf(t: float, dof: int) -> float:
    """P(T <= t) for Student's t with `dof` (a whole number >= 1) degrees of freedom."""
    _check(dof)
    return 0.5 + math.copysign(_central(abs(t), dof), t) / 2


def _central(t: float, dof: int) -> float:
    """A(t | ν) = P(|T| <= t), t >= 0 (A&S 26.7.3, 26.7.4)."""
    if math.isinf(t):
        return 1.0
    theta = math.atan(t / math.sqrt(dof))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if dof % 2 == 1:
        if dof == 1:
            return 2 * theta / math.pi
        # 1 + (2/3)cos² + (2·4)/(3·5)cos⁴ + ... up to cos^(ν-3)
        term = total = 1.0
        for j in range(1, (dof - 1) // 2):
            term *= cos2 * (2 * j) / (2 * j + 1)
            total += term
        return 2 / math.pi * (theta + sin * math.cos(theta) * total)
    # 1 + (1/2)cos² + (1·3)/(2·4)cos⁴ + ... up to cos^(ν-2)
    term = total = 1.0
    for j in range(1, dof // 2):
        term *= cos2 * (2 * j - 1) / (2 * j)
        total += term
    return sin * total


def t_quantile(p: float, dof: int) -> float:
    """The t with P(T <= t) = p, for 0 < p < 1 and whole dof >= 1.

    t_quantile(0.975, dof) is the multiplier of a two-sided 95% interval."""
    _check(dof)
    if not 0 < p < 1:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p}")
    if p == 0.5:
        return 0.0
    target = abs(2 * p - 1)  # P(|T| <= t) for the upper tail's t
    lo, hi = 0.0, 1.0
    while _central(hi, dof) < target:
        lo, hi = hi, hi * 2
    for _ in range(200):  # bisection: the CDF is monotone, so this always converges
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _central(mid, dof) < target else (lo, mid)
    t = (lo + hi) / 2
    return t if p > 0.5 else -t


def _check(dof: int) -> None:
    if not isinstance(dof, int) or isinstance(dof, bool) or dof < 1:
        raise ValueError(f"degrees of freedom must be a whole number >= 1, got {dof!r}")

"""Small hand-written SVG charts: lines (step or straight), scatter, bars.

No plotting library and no script: each chart is a self-contained `<svg class="plot">`
whose data marks carry `class="series"` (the browser test counts them) and a `<title>`
for hover text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
]
# colours for models, agents and tools, picked by a hash of the name (`_plots.Colors`):
# no greys (unknown is #555, humans near-black), a darker twin of each base hue after it
LABEL_PALETTE = [
    *PALETTE[:9],
    "#0b4f80",
    "#8b1a1a",
    "#1b6e1b",
    "#b35900",
    "#5b3a8a",
    "#5c3a2e",
    "#a3347f",
    "#0f7f8a",
    "#7a7a12",
]
HUMAN_COLOR = "#111111"
W, H = 600, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 190, 16, 42  # margins; the legend sits on the right


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    color: str = PALETTE[0]
    step: bool = False  # a step function (the score held until the next point)
    faint: bool = False  # one run among many: thin, translucent, not in the legend
    markers: bool = False  # dots only (scatter)
    dashed: bool = False
    band: list[tuple[float, float, float]] = field(default_factory=list)  # (x, lo, hi)
    errors: list[tuple[float, float, float]] = field(default_factory=list)  # (x, y, ±)
    title: str = ""


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About `count` round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(v, 12))
    return ticks


def fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:.4g}"


class _Frame:
    def __init__(self, xs: Sequence[float], ys: Sequence[float], y_floor: float | None):
        xs = [x for x in xs if math.isfinite(x)] or [0.0, 1.0]
        ys = [y for y in ys if math.isfinite(y)] or [0.0, 1.0]
        ylo = min(ys) if y_floor is None else min(min(ys), y_floor)
        self.xt = nice_ticks(min(xs), max(xs))
        self.yt = nice_ticks(ylo, max(ys))
        self.x0, self.x1, self.y0, self.y1 = self.xt[0], self.xt[-1], self.yt[0], self.yt[-1]

    def px(self, x: float) -> float:
        return LEFT + (x - self.x0) / ((self.x1 - self.x0) or 1) * (W - LEFT - RIGHT)

    def py(self, y: float) -> float:
        return H - BOTTOM - (y - self.y0) / ((self.y1 - self.y0) or 1) * (H - TOP - BOTTOM)


def _axes(
    f: _Frame, x_label: str, y_label: str, ref: float | None, x_ticks: bool = True
) -> list[str]:
    out = []
    for t in f.yt:
        y = f.py(t)
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt(t)}</text>')
    for t in f.xt if x_ticks else []:
        x = f.px(t)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{H - BOTTOM}" y2="{H - BOTTOM + 4}" '
            'class="axis"/>'
        )
        out.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{fmt(t)}</text>')
    out.append(
        f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}" class="axis"/>'
    )
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{H - BOTTOM}" class="axis"/>')
    if ref is not None and f.y0 <= ref <= f.y1:
        y = f.py(ref)
        out.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="ref">'
            f"<title>reference = {fmt(ref)}</title></line>"
        )
    mid_x = (LEFT + W - RIGHT) / 2
    out.append(
        f'<text x="{mid_x:.0f}" y="{H - 6}" text-anchor="middle" class="label">'
        f"{escape(x_label)}</text>"
    )
    mid_y = (TOP + H - BOTTOM) / 2
    out.append(
        f'<text transform="translate(14 {mid_y:.0f}) rotate(-90)" text-anchor="middle" '
        f'class="label">{escape(y_label)}</text>'
    )
    return out


def _path(f: _Frame, pts: list[tuple[float, float]], step: bool, back: bool = False) -> str:
    """An SVG path through `pts`; a step path holds each y until the next x (walking
    backwards, `back`, it drops to the earlier y at the later point's x)."""
    d: list[str] = []
    prev: tuple[float, float] | None = None
    for x, y in pts:
        if prev is not None and step:
            corner = (prev[0], y) if back else (x, prev[1])
            d.append(f"L{f.px(corner[0]):.1f},{f.py(corner[1]):.1f}")
        d.append(f"{'M' if not d else 'L'}{f.px(x):.1f},{f.py(y):.1f}")
        prev = (x, y)
    return "".join(d)


def _legend(series: list[Series]) -> list[str]:
    out, y = [], TOP + 6
    seen = set()
    for s in series:
        if s.faint or s.name in seen:
            continue
        seen.add(s.name)
        x = W - RIGHT + 10
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        out.append(
            f'<line x1="{x}" x2="{x + 16}" y1="{y}" y2="{y}" stroke="{s.color}" '
            f'stroke-width="2.5"{dash}/>'
        )
        name = s.name if len(s.name) <= 27 else s.name[:26] + "…"
        out.append(
            f'<text x="{x + 20}" y="{y + 4}">{escape(name)}<title>{escape(s.name)}</title></text>'
        )
        y += 16
    return out


def line_chart(
    series: list[Series],
    *,
    x_label: str,
    y_label: str,
    title: str = "",
    ref: float | None = None,
    y_floor: float | None = 0.0,
) -> str:
    """Lines, step lines, bands, error bars and dots on shared axes."""
    xs = [x for s in series for x, _ in s.points] + [b[0] for s in series for b in s.band]
    ys = [y for s in series for _, y in s.points]
    ys += [v for s in series for b in s.band for v in b[1:]]
    ys += [
        e[1] + d * e[2] for s in series for e in s.errors for d in (-1, 1) if math.isfinite(e[2])
    ]
    f = _Frame(xs, ys, y_floor)
    body = _axes(f, x_label, y_label, ref)
    for s in series:
        tip = f"<title>{escape(s.title or s.name)}</title>"
        if s.band:
            upper = [(x, hi) for x, _, hi in s.band]
            lower = [(x, lo) for x, lo, _ in reversed(s.band)]
            # a step band: upper edge forwards, lower edge backwards (steps mirrored)
            d = _path(f, upper, s.step) + _path(f, lower, s.step, back=True).replace("M", "L", 1)
            body.append(f'<path d="{d}Z" fill="{s.color}" opacity="0.15" stroke="none"/>')
        for x, y, e in s.errors:
            if math.isfinite(e):
                body.append(
                    f'<line x1="{f.px(x):.1f}" x2="{f.px(x):.1f}" y1="{f.py(y - e):.1f}" '
                    f'y2="{f.py(y + e):.1f}" stroke="{s.color}" stroke-width="1.2"/>'
                )
        if s.markers:
            for x, y in s.points:
                body.append(
                    f'<circle class="series" cx="{f.px(x):.1f}" cy="{f.py(y):.1f}" r="3.2" '
                    f'fill="{s.color}" fill-opacity="0.75">{tip}</circle>'
                )
        elif s.points:
            width, opacity = ("1", "0.28") if s.faint else ("2.2", "1")
            dash = ' stroke-dasharray="5 3"' if s.dashed else ""
            body.append(
                f'<path class="series" d="{_path(f, s.points, s.step)}" fill="none" '
                f'stroke="{s.color}" stroke-width="{width}" stroke-opacity="{opacity}"'
                f"{dash}>{tip}</path>"
            )
            if len(s.points) == 1 or not s.faint:
                for x, y in s.points if len(s.points) <= 12 else []:
                    body.append(
                        f'<circle cx="{f.px(x):.1f}" cy="{f.py(y):.1f}" r="2.2" fill="{s.color}"/>'
                    )
    body += _legend(series)
    return _svg(title, body)


def bar_chart(
    categories: list[str],
    groups: Sequence[tuple[str, Sequence[float], Sequence[float] | None]],
    *,
    y_label: str,
    title: str = "",
    stacked: bool = False,
    colors: list[str] | None = None,
) -> str:
    """Bars per category: one bar per group side by side (with optional ± errors), or
    the groups stacked."""
    colors = colors or [PALETTE[i % len(PALETTE)] for i in range(len(groups))]
    tops = (
        [sum(g[1][i] for g in groups) for i in range(len(categories))]
        if stacked
        else [
            v + (e or 0) for g in groups for v, e in zip(g[1], g[2] or [0] * len(g[1]), strict=True)
        ]
    )
    f = _Frame([0, 1], [v for v in tops if math.isfinite(v)] + [0.0], 0.0)
    body = _axes_bars(f, categories, y_label)
    slot = (W - LEFT - RIGHT) / max(1, len(categories))
    bar = slot * 0.8 / (1 if stacked else max(1, len(groups)))
    for ci, _ in enumerate(categories):
        base = 0.0
        for gi, (name, values, errors) in enumerate(groups):
            v = values[ci]
            if not math.isfinite(v):
                continue
            x = LEFT + ci * slot + slot * 0.1 + (0 if stacked else gi * bar)
            lo, hi = (base, base + v) if stacked else (min(0, v), max(0, v))
            y0, y1 = f.py(hi), f.py(lo)
            tip = f"{name} · {categories[ci]}: {fmt(v)}"
            e = errors[ci] if errors else math.nan
            if math.isfinite(e):
                tip += f" ± {fmt(e)}"
            body.append(
                f'<rect class="series" x="{x:.1f}" y="{y0:.1f}" width="{bar * 0.92:.1f}" '
                f'height="{max(0.5, y1 - y0):.1f}" fill="{colors[gi]}">'
                f"<title>{escape(tip)}</title></rect>"
            )
            if math.isfinite(e) and not stacked:
                cx = x + bar * 0.46
                body.append(
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{f.py(v - e):.1f}" '
                    f'y2="{f.py(v + e):.1f}" stroke="#222" stroke-width="1.2"/>'
                )
            if stacked:
                base += v
    body += _legend([Series(g[0], [], colors[i]) for i, g in enumerate(groups)])
    return _svg(title, body)


def _axes_bars(f: _Frame, categories: list[str], y_label: str) -> list[str]:
    out = _axes(f, "", y_label, None, x_ticks=False)
    slot = (W - LEFT - RIGHT) / max(1, len(categories))
    for i, c in enumerate(categories):
        x = LEFT + slot * (i + 0.5)
        room = max(4, int(slot / 6.2))  # characters that fit under one slot
        short = c if len(c) <= room else c[: room - 1] + "…"
        out.append(
            f'<text x="{x:.1f}" y="{H - BOTTOM + 14}" text-anchor="middle">'
            f"{escape(short)}<title>{escape(c)}</title></text>"
        )
    return out


def _svg(title: str, body: list[str]) -> str:
    head = f"<title>{escape(title)}</title>" if title else ""
    return (
        f'<svg class="plot" viewBox="0 0 {W} {H}" '
        f'width="{W}" height="{H}" role="img">{head}' + "".join(body) + "</svg>"
    )

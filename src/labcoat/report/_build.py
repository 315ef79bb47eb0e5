"""Build the report: read the logs, compute the tables, draw, write one HTML file."""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Callable, Iterable
from html import escape
from pathlib import Path
from urllib.parse import unquote

from labcoat import analysis as an
from labcoat._errors import LabcoatError
from labcoat._run._budget import SpendSummary
from labcoat._util.atomic import atomic_write
from labcoat._util.eval_logs import Warn
from labcoat.report import _plots as plots
from labcoat.report import _sections as sec
from labcoat.report._behaviour_section import behaviour
from labcoat.report._budget_section import budget_section, read_budgets
from labcoat.report._card import card_section
from labcoat.report._compare_section import model_comparison
from labcoat.report._context import Context, anchor, family_order, family_title, runs_by_task
from labcoat.report._family_sections import family_extras
from labcoat.report._html import page
from labcoat.report._human_section import humans_and_agents
from labcoat.report._plot_sections import CurveTables, family_overview, task_plots
from labcoat.report._regrade_section import regrades

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stages `headers`, `samples` (reading), `report`."""


def _header(data: an.RunData, title: str) -> str:
    runs = data.runs
    errors = int((runs["status"] == "error").sum())
    flagged = int(runs["flagged"].eq(True).sum())
    waiting = len(data.not_started)  # the budget's: in no figure, listed under Runs
    not_started = f" · {waiting} not started" if waiting else ""
    if len(data.cannot_run_here):  # this machine could not run them: in no figure either
        not_started += f" · {len(data.cannot_run_here)} cannot run here"
    places = [unquote(r.removeprefix("file://")) for r in data.roots]  # local paths plainly
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    view = places[0] if len(places) == 1 else "LOGDIR"
    roots = ", ".join(places) or "(none)"
    return (
        f"<h1>{escape(title)}</h1>"
        f"<p>{len(data.logs)} logs · {len(runs)} runs · "
        f"{errors} errored{not_started} · {flagged} flagged · built {when} from "
        f"{escape(roots)}</p>"
        f"<p>Run links open in <code>inspect view --log-dir {escape(view)}</code> "
        "(start it first; it serves on port 7575).</p>"
    )


def _family_section(ctx: Context, family: str, curves: CurveTables) -> str:
    extra = family_extras(family)
    parts = [
        f'<section id="{anchor("family", family)}">',
        f"<h2>{escape(family_title(family))}</h2>",
        sec.task_table(ctx, family),
        sec.reliability(ctx, family),
        extra(ctx) if extra else "",
        family_overview(ctx, family, curves),
        task_plots(ctx, family, curves),
        "</section>",
    ]
    return "".join(parts)


def build_report(
    data: an.RunData,
    *,
    title: str = "labcoat report",
    human_hourly_usd: float | None = None,
    progress: Progress | None = None,
    budgets: list[tuple[str, SpendSummary]] | None = None,
) -> str:
    """The report as one self-contained HTML string (`budgets`: `read_budgets`'s)."""
    colors = plots.Colors(
        list(data.runs["label"].dropna().astype(str)),
        plots.human_labels(data.runs),
        list(data.tool_calls["function"].dropna().astype(str)),
    )
    ctx = Context(data, colors, an.task_summary(data), runs_by_task(data.runs))
    families = sorted(ctx.summary["family"].dropna().unique(), key=family_order)
    curves: list[CurveTables] = []

    def compute_curves() -> str:
        curves.append(CurveTables.of(data))
        return ""

    # the leaderboard first, on the first screen; the card (collapsed) right after it
    steps: list[Callable[[], str]] = [
        lambda: sec.leaderboard(ctx),
        lambda: card_section(data, budgets or []),
        lambda: model_comparison(ctx),
        compute_curves,
    ]

    def family_step(family: str) -> Callable[[], str]:
        return lambda: _family_section(ctx, family, curves[0])  # curves: made by then

    steps += [family_step(f) for f in families]
    steps += [
        lambda: humans_and_agents(ctx, curves[0]),
        lambda: behaviour(ctx),
        lambda: sec.costs(ctx, human_hourly_usd),
        lambda: budget_section(budgets or []),
        lambda: sec.integrity(ctx),
        lambda: regrades(ctx),
        lambda: sec.runs_table(ctx),
        lambda: sec.logs_table(ctx),
    ]
    sections = []
    for done, make in enumerate(steps, 1):
        sections.append(make())
        if progress:
            progress("report", done, len(steps))
    html = "".join(sections)
    nav = [("leaderboard", "Leaderboard"), ("card", "Card")]
    nav += [("paired", "Model vs model")] if 'id="paired"' in html else []
    nav += [(anchor("family", f), family_title(f)) for f in families]
    nav += [
        (a, t)
        for a, t in (
            ("humans", "Humans"),
            ("behaviour", "Behaviour"),
            ("cost", "Cost"),
            ("budget", "Budget"),
        )
        if f'id="{a}"' in html
    ]
    nav += [("integrity", "Integrity")]
    nav += [("regrades", "Regrades")] if 'id="regrades"' in html else []
    nav += [("runs", "Runs"), ("logs", "Logs")]
    return page(title, _header(data, title), nav, sections)


def _describe(source: str | Path | Iterable[str | Path]) -> str:
    return str(source) if isinstance(source, str | Path) else ", ".join(map(str, source))


def write_report(
    source: str | Path | Iterable[str | Path],
    out: str | Path,
    *,
    humans: str | Path | None = None,
    view_url: str | None = None,
    human_hourly_usd: float | None = None,
    title: str = "labcoat report",
    progress: Progress | None = None,
    warn: Warn | None = None,
) -> Path:
    """Read the logs at `source` (plus a human-baseline CSV) and write the report to `out`.

    Unreadable logs are left out, each told to `warn` (else logged); an output that
    cannot be written is found before any log is read.
    """
    path = Path(out)
    _check_writable(path)
    sources = [source] if isinstance(source, str | Path) else list(source)
    for src in sources:
        if "://" not in str(src) and not Path(src).exists():
            raise LabcoatError(f"{src}: no such file or directory")
    data = an.read_runs(sources, progress=progress, view_url=view_url, warn=warn)
    if data.logs.empty:
        raise LabcoatError(f"no readable .eval logs found in {_describe(source)}")
    if humans is not None:
        data = data.with_humans(an.read_human_csv(humans))
    html = build_report(
        data,
        title=title,
        human_hourly_usd=human_hourly_usd,
        progress=progress,
        budgets=read_budgets(sources),
    )
    try:  # whole or not at all: a reader never sees half a report
        atomic_write(path, html)
    except OSError as ex:
        raise LabcoatError(f"{path}: cannot write the report ({ex.strerror})") from None
    return path


def _check_writable(path: Path) -> None:
    if path.is_dir():
        raise LabcoatError(f"{path}: is a folder; name the report file, e.g. {path}/report.html")
    # mkdir of a folder under a file says only "File exists": name the file instead
    if blocker := next((p for p in path.parents if p.exists() and not p.is_dir()), None):
        raise LabcoatError(
            f"{path}: cannot write the report there ({blocker} is a file, not a folder)"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}."):
            pass
    except OSError as ex:
        raise LabcoatError(f"{path}: cannot write the report there ({ex.strerror})") from None

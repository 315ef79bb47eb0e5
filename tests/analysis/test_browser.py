"""The report in a real headless browser: Debian's Chromium driven by Playwright.

Checks that the page loads without fetching anything, that the leaderboard is on the
first screen of a 1280x800 window, that every plot renders with visible marks, that the
leaderboard and runs tables hold every row, that the filter box works, and that a model
has the same colour in reports of different folders; keeps a full-page screenshot in
`test-artifacts/report.png` (or under $LABCOAT_TEST_ARTIFACTS). Without Chromium or
Playwright the tests skip and say why; with LABCOAT_REQUIRE_BROWSER=1 they fail instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from labcoat._cli.main import main
from labcoat.analysis import RunData, leaderboard, read_human_csv, read_runs
from labcoat.families import discover
from labcoat.report import write_report
from labcoat.suites import resolve_target

from ._synthetic import Sample, demo_logs, write_log

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("LABCOAT_TEST_ARTIFACTS", ROOT / "test-artifacts"))
# without the networking flags Chromium reaches for Google hosts and stalls offline
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    path = (
        os.environ.get("LABCOAT_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if not path:
        _missing(
            "no Chromium: install Debian's (`apt-get install chromium`, as "
            "scripts/bootstrap.sh --dev does) or set LABCOAT_CHROMIUM"
        )
    return str(path)


def _missing(reason: str) -> None:
    """Skip with the reason printed, or fail when LABCOAT_REQUIRE_BROWSER is set."""
    if os.environ.get("LABCOAT_REQUIRE_BROWSER"):
        pytest.fail(reason)
    pytest.skip(reason)


SCREEN = {"width": 1280, "height": 800}  # a laptop's window: the report's first screen


@contextmanager
def _browser() -> Iterator[Any]:
    """A headless Chromium context with a 1280x800 window (skips or fails without one)."""
    try:
        from playwright import sync_api as playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[dev]')")
    chromium = _chromium()
    with playwright.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, args=CHROMIUM_ARGS, headless=True, viewport=SCREEN
        )
        try:
            yield browser
        finally:
            browser.close()


def _artifact(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / name


def check_in_browser(report: Path, data: RunData, screenshot: str) -> None:
    """Open `report` in Chromium and check it against the runs it was built from."""
    requests: list[str] = []
    errors: list[str] = []
    with _browser() as browser:
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(report.resolve().as_uri(), wait_until="load", timeout=30_000)
        first = page.evaluate(FIRST_SCREEN_JS)  # as it opens, nothing scrolled or opened
        page.screenshot(path=str(_artifact(f"first-screen-{screenshot}")))
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        plots = page.evaluate(PLOTS_JS)
        board_rows = page.locator("#leaderboard-table tbody tr").count()
        run_rows = page.locator("#runs-table tbody tr").count()
        page.fill("input.filter", "error")
        filtered = page.locator("#runs-table tbody tr:visible").count()
        page.fill("input.filter", "")
        # scrolled to the end, as a reader who has read the page: every table's
        # header row must still sit above its body, not stuck below it
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        headers_below = page.evaluate(HEADERS_BELOW_JS)
        shot = _artifact(screenshot)
        page.screenshot(path=str(shot), full_page=True)
        print(f"\nscreenshot: {shot}")

    assert not errors, errors
    # the leaderboard's heading and first row are on the first screen, and nothing
    # (the sticky nav bar) covers that row
    assert first["head"] >= 0 and first["row_bottom"] <= SCREEN["height"], first
    assert first["row_seen"], first
    assert not headers_below, f"tables whose header shows below their rows: {headers_below}"
    assert all(u.startswith(("file://", "data:")) for u in requests), requests
    assert plots, "no plots"
    empty = [p["title"] for p in plots if p["w"] < 100 or p["h"] < 100 or p["marks"] == 0]
    assert not empty, f"plots with nothing drawn: {empty}"
    assert board_rows == len(leaderboard(data)) > 0
    assert run_rows == len(data.runs)
    errored = int((data.runs["status"] == "error").sum())
    assert errored <= filtered <= run_rows  # the filter keeps the errored runs in view
    assert shot.stat().st_size > 20_000


# where the leaderboard's header row and first body row are in the window, and whether
# the point in that row's first cell is the row's own (not something drawn over it)
FIRST_SCREEN_JS = """() => {
    const table = document.getElementById('leaderboard-table');
    const head = table.tHead.rows[0].getBoundingClientRect();
    const row = table.tBodies[0].rows[0], box = row.getBoundingClientRect();
    const hit = document.elementFromPoint(box.left + 8, box.top + box.height / 2);
    return {head: head.top, row_bottom: box.bottom, row_seen: !!hit && row.contains(hit)};
}"""

# tables whose header row is drawn below their first body row
HEADERS_BELOW_JS = """() => [...document.querySelectorAll('table')].filter(t => {
    const head = t.tHead && t.tHead.rows[0].cells[0], row = t.tBodies[0] && t.tBodies[0].rows[0];
    return head && row && head.getBoundingClientRect().top > row.getBoundingClientRect().top;
}).map(t => t.id || '(table)')"""

# every plot: its size, and how many of its data marks have a visible extent
PLOTS_JS = """() => [...document.querySelectorAll('svg.plot')].map(svg => {
    const box = svg.getBoundingClientRect();
    const marks = [...svg.querySelectorAll('.series')].filter(m => {
        const b = m.getBBox(); return b.width > 0 || b.height > 0; });
    return {w: box.width, h: box.height, marks: marks.length,
            title: svg.querySelector('title')?.textContent || ''};
})"""


def test_report_renders_in_chromium(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    demo_logs(logs, epochs=3)
    report = write_report(logs, tmp_path / "report.html", humans=logs / "humans.csv")
    data = read_runs(logs).with_humans(read_human_csv(logs / "humans.csv"))
    assert int((data.runs["status"] == "error").sum()) > 0  # errored runs are in the demo
    check_in_browser(report, data, "report.png")


# the colour Chromium draws each legend entry's line in, by the entry's name
LEGEND_JS = """() => [...document.querySelectorAll('svg.plot text')].filter(t =>
    t.previousElementSibling && t.previousElementSibling.tagName === 'line'
).map(t => [t.firstChild ? t.firstChild.textContent : '', getComputedStyle(t.previousElementSibling).stroke])"""


def test_a_model_has_one_colour_in_reports_of_different_folders(tmp_path: Path) -> None:
    # alone in one folder, beside two models whose names sort before it in the other
    for folder, models in (("one", ["zeta/model"]), ("two", ["alpha/model", "zeta/model"])):
        for model in models:
            samples = [Sample(task_id=t, epoch=e) for t in ("t1", "t2") for e in (1, 2)]
            write_log(tmp_path / folder, samples, model=model)
    seen: dict[str, set[str]] = {}
    with _browser() as browser:
        page = browser.new_page()
        for folder in ("one", "two"):
            report = write_report(tmp_path / folder, tmp_path / f"{folder}.html")
            page.goto(report.resolve().as_uri(), wait_until="load", timeout=30_000)
            for name, stroke in page.evaluate(LEGEND_JS):
                seen.setdefault(f"{folder} {name}", set()).add(stroke)
    one, two = seen["one zeta/model"], seen["two zeta/model"]
    assert len(one) == 1 and one == two, seen  # one colour, the same in both reports
    assert seen["two alpha/model"] != two


@pytest.mark.slow
def test_report_of_real_mini_runs_renders_in_chromium(tmp_path: Path) -> None:
    """`labcoat validate mini` plus repeated oracle runs, then `labcoat report`."""
    commands = [
        ["validate", "mini", "--family", "rebench", "--log-dir", str(tmp_path / "v")],
        [
            "eval",
            "mini",
            "--family",
            "rebench",
            "--agent",
            "oracle",
            "--epochs",
            "3",
            "--log-dir",
            str(tmp_path / "e"),
        ],
    ]
    for command in commands:
        with pytest.raises(SystemExit):  # exit 1 too: on a busy machine a timing task may
            main(command)  # miss its thresholds, and its logs are what matter here
    report = tmp_path / "report.html"
    main(["report", str(tmp_path), "-o", str(report)])
    data = read_runs(tmp_path)
    tasks = len(discover(resolve_target("mini"), ["rebench"]))
    assert len(data.runs) == tasks * 5  # per task: oracle and noop once, oracle three times
    check_in_browser(report, data, "report-mini.png")

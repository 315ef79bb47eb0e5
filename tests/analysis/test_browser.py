"""The report in a real headless browser: Debian's Chromium driven by Playwright.

Checks that the page loads without fetching anything, that every plot renders with
visible marks, that the leaderboard and runs tables hold every row, and that the filter
box works; keeps a full-page screenshot in `test-artifacts/report.png` (or under
$LABCOAT_TEST_ARTIFACTS). Without Chromium or Playwright the test skips and says why;
with LABCOAT_REQUIRE_BROWSER=1 it fails instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from labcoat._cli.main import main
from labcoat.analysis import RunData, leaderboard, read_human_csv, read_runs
from labcoat.families import discover
from labcoat.report import write_report
from labcoat.suites import resolve_target

from ._synthetic import demo_logs

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


def check_in_browser(report: Path, data: RunData, screenshot: str) -> None:
    """Open `report` in Chromium and check it against the runs it was built from."""
    try:
        from playwright import sync_api as playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[dev]')")
    chromium = _chromium()
    requests: list[str] = []
    errors: list[str] = []
    with playwright.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        browser = p.chromium.launch_persistent_context(
            profile,
            executable_path=chromium,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 900},
        )
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(report.resolve().as_uri(), wait_until="load", timeout=30_000)
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
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / screenshot
            page.screenshot(path=str(shot), full_page=True)
            print(f"\nscreenshot: {shot}")
        finally:
            browser.close()

    assert not errors, errors
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

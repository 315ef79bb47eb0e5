"""How long `labcoat report` takes, and how big and fast to open its file, for many runs.

Writes synthetic logs of every family (tests/analysis/_synthetic.py: two models, RE-Bench
runs with steps, tool calls and intermediate scores; ResearchGym sub-tasks; PaperBench
graded trees; ResearchCodeBench snippets with and without the paper; human baselines),
then times reading the logs and building the report, and, with --browser, opening it in
headless Chromium. Prints one `key=value` line per figure.

    python bench/report_build.py [--runs 300] [--tool-output-bytes 2000]
                                 [--message-bytes 4000] [--browser] [--figures DIR]

`--figures docs/analysis` rewrites the example plots of docs/analysis.md
(`--runs 130 --message-bytes 0` is plenty for them).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import time
from pathlib import Path

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from analysis._synthetic import demo_logs

from labcoat.analysis import read_human_csv, read_runs
from labcoat.report import build_report

RUNS_PER_EPOCH = 22  # demo_logs: 2 models x (3 RE-Bench + 2 ResearchGym + 2 PaperBench + 4 RCB)


def _open_in_browser(path: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path="/usr/bin/chromium", args=args, headless=True
        )
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(path.resolve().as_uri(), wait_until="load")
        wall = time.perf_counter() - start
        timing = page.evaluate(
            "(() => { const t = performance.getEntriesByType('navigation')[0];"
            " return {dcl: t.domContentLoadedEventEnd, load: t.loadEventEnd}; })()"
        )
        browser.close()
    return {"open_wall_s": wall, "dom_ready_ms": timing["dcl"], "load_ms": timing["load"]}


# figures for docs/analysis.md: file name -> a phrase of the plot's title
FIGURES = {
    "score-over-time.svg": "finetune_gpt2/main: score over wall-clock",
    "family-score-over-time.svg": "RE-Bench: score over time, mean over tasks",
    "best-of-k.svg": "RE-Bench: best of k",
    "best-of-k-equal-time.svg": "RE-Bench: best of k at equal time",
    "score-over-tokens.svg": "finetune_gpt2/main: score over tokens",
    "reliability.svg": "capability vs reliability",
    "paperbench-categories.svg": "PaperBench score by rubric category",
    "researchcodebench-papers.svg": "ResearchCodeBench by paper",
    "researchcodebench-failures.svg": "ResearchCodeBench failure classes",
    "action-density.svg": "action density vs score",
    "phases-thirds.svg": "openai/model-a: tool calls by phase",
}
STANDALONE_STYLE = (
    "<style>svg{font-family:sans-serif;background:#fff} text{font-size:11px;fill:#333}"
    " .label{font-size:12px;fill:#111} .grid{stroke:#eee} .axis{stroke:#888}"
    " .ref{stroke:#999;stroke-dasharray:2 3}</style>"
)


def write_figures(html: str, folder: Path) -> None:
    """Each plot of FIGURES (the first whose title matches) as a standalone SVG file."""
    folder.mkdir(parents=True, exist_ok=True)
    plots = re.findall(r'<svg class="plot".*?</svg>', html, flags=re.S)
    for name, phrase in FIGURES.items():
        svg = next((p for p in plots if phrase in p.split("</title>", 1)[0]), None)
        if svg is None:
            raise SystemExit(f"no plot titled like {phrase!r}")
        svg = svg.replace('<svg class="plot"', '<svg xmlns="http://www.w3.org/2000/svg"', 1)
        svg = svg.replace('role="img">', 'role="img">' + STANDALONE_STYLE, 1)
        (folder / name).write_text(svg + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="agent runs, roughly")
    parser.add_argument("--tool-output-bytes", type=int, default=2000)
    parser.add_argument("--message-bytes", type=int, default=4000, help="per tool call")
    parser.add_argument("--browser", action="store_true", help="also time opening it")
    parser.add_argument(
        "--figures", type=Path, metavar="DIR", help="also write the docs' example plots to DIR"
    )
    args = parser.parse_args()
    epochs = max(1, math.ceil(args.runs / RUNS_PER_EPOCH))
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        start = time.perf_counter()
        counts = demo_logs(
            logs,
            epochs=epochs,
            tool_output_bytes=args.tool_output_bytes,
            message_bytes=args.message_bytes,
        )
        generate = time.perf_counter() - start
        log_bytes = sum(f.stat().st_size for f in logs.rglob("*.eval"))

        start = time.perf_counter()
        data = read_runs(logs).with_humans(read_human_csv(logs / "humans.csv"))
        read = time.perf_counter() - start
        start = time.perf_counter()
        html = build_report(data)
        build = time.perf_counter() - start
        out = Path(tmp) / "report.html"
        out.write_text(html, encoding="utf-8")

        figures: dict[str, float | int] = {
            "logs": counts["logs"],
            "runs": len(data.runs),
            "log_mib": round(log_bytes / 2**20, 1),
            "generate_s": round(generate, 2),
            "read_s": round(read, 2),
            "build_s": round(build, 2),
            "total_s": round(read + build, 2),
            "report_kib": round(len(html.encode()) / 1024),
            "plots": html.count('<svg class="plot"'),
        }
        if args.figures:
            write_figures(html, args.figures)
        if args.browser:
            figures.update({k: round(v, 2) for k, v in _open_in_browser(out).items()})
    for key, value in figures.items():
        print(f"{key}={value}")


if __name__ == "__main__":
    main()

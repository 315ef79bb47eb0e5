"""Grading throughput on a ResearchCodeBench pset, with the reference as every completion.

Grades every snippet of every paper that can run here through labcoat's grading pool
(one protected bwrap sandbox per paper, runs in parallel, each in a fresh copy as its
own user, outcome from the test process's report) and checks that every reference
passes. With `--baseline` it also times upstream's own sequential runner on the same
snippets, one after another, as `pset.py`'s `_test_all_sequential` does it: copy the
paper folder into a cache folder, write the filled file and the test script, then
upstream's own `run_shell_command("cd DIR && timeout 60 python paper2code_test.py")`
and `check_complete_success` (imported from the checkout when it has them; the same
steps otherwise), with the paper's built environment on the path and no sandbox.

    python bench/researchcodebench_grade.py [TARGET] [--parallel N] [--rounds R]
                                            [--baseline] [--baseline-rounds R] [--fresh]
                                            [--task PAPER ...]

TARGET is `mini` (default), or a ResearchCodeBench checkout (or its pset/). Papers that
cannot run here (their environment, or modules it lacks) are listed and left out of both
sides. Environments are built (or found in the cache), sandboxes opened and interpreters
preloaded, by one run per paper and slot, before the clock starts (`setup_seconds`).
Each round grades the whole set; with `--baseline`, rounds of upstream's runner follow
(interleaved while both have rounds left, so load changes hit both alike). Figures are
medians over rounds. `--fresh` starts a new interpreter per run instead of forking the
paper's preloaded one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)
import anyio

from labcoat.families.researchcodebench import (
    AnnotatedFile,
    Paper,
    Snippet,
    find_pset,
    insert_completion,
    load_papers,
    mask_snippet,
)
from labcoat.families.researchcodebench._edits import placeholder_index
from labcoat.families.researchcodebench._grading import GradingPool, TestRun, Watch
from labcoat.families.researchcodebench._task import check_environments, planned_environments
from labcoat.sandbox import PythonEnv, built_environment
from labcoat.suites import resolve_target

Job = tuple[Paper, AnnotatedFile, Snippet, str]


def reference_jobs(papers: list[Paper]) -> list[Job]:
    jobs = []
    for paper in papers:
        for af in paper.parse_annotated():
            for s in af.snippets:
                masked = mask_snippet(af, s)
                jobs.append((paper, af, s, insert_completion(masked, s, textwrap.dedent(s.body))))
    return jobs


async def grade_all(
    jobs: list[Job],
    environments: dict[str, PythonEnv],
    parallel: int,
    rounds: int,
    preload: bool,
    baseline: Callable[[], float] | None,
    baseline_rounds: int,
) -> dict[str, object]:
    failed: list[tuple[str, TestRun]] = []
    ours: list[float] = []
    theirs: list[float] = []
    needs_network: set[str] = set()
    async with GradingPool(parallel, preload=preload) as pool:

        async def one(job: Job) -> None:
            paper, af, s, filled = job
            first = placeholder_index(mask_snippet(af, s).splitlines(), s) + 1
            watch = Watch(af.path, first, first + max(1, s.weight) - 1)
            run = await pool.grade(
                paper, {af.path: filled}, environment=environments[paper.id], watch=watch
            )
            if run.needs_network:
                needs_network.add(paper.id)
            elif not run.passed:
                failed.append((f"{paper.id}/{s.id}", run))

        async def grade_round() -> float:
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for job in jobs:
                    tg.start_soon(one, job)
            return time.perf_counter() - start

        start = time.perf_counter()
        papers = {id(j[0]): j[0] for j in jobs}.values()
        async with anyio.create_task_group() as tg:  # every slot's preloaded runner
            for paper in papers:
                first = [j for j in jobs if j[0] is paper][:parallel]
                for job in first:
                    tg.start_soon(one, job)
        setup = time.perf_counter() - start
        failed.clear()
        # papers whose tests download at run time are unavailable here: left out of both
        jobs[:] = [j for j in jobs if j[0].id not in needs_network]
        for i in range(max(rounds, baseline_rounds if baseline else 0)):
            if i < rounds:
                ours.append(await grade_round())
            if baseline is not None and i < baseline_rounds:
                theirs.append(await anyio.to_thread.run_sync(baseline))
    return {
        "setup": setup,
        "ours": ours,
        "theirs": theirs,
        "failed": failed,
        "needs_network": sorted(needs_network),
    }


def upstream_runner(checkout: Path | None) -> tuple[Callable, Callable, str]:
    """(run_shell_command, check_complete_success, where they come from)."""
    if checkout is not None and (checkout / "core" / "annotation" / "utils").is_dir():
        sys.path.insert(0, str(checkout))
        try:
            module = importlib.import_module("core.annotation.utils.run_shell_command")
            return module.run_shell_command, module.check_complete_success, "the checkout"
        except ImportError:
            pass
        finally:
            sys.path.remove(str(checkout))

    def run_shell_command(command: str) -> tuple[bool, int, str, str]:
        r = subprocess.run(command, shell=True, capture_output=True, text=True)
        return r.returncode == 0, r.returncode, r.stdout, r.stderr

    def check_complete_success(success: bool, exit_code: int, stdout: str, stderr: str) -> bool:
        words = ("Error:", "Exception:", "Traceback", "failed")
        return success and exit_code == 0 and not any(w in stdout + stderr for w in words)

    return run_shell_command, check_complete_success, "the same steps (no checkout)"


def upstream_round(
    jobs: list[Job], environments: dict[str, PythonEnv], run_shell_command, check
) -> tuple[float, int]:
    """Upstream's sequential path over every job, timed; (seconds, references passed)."""
    passed = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rcb-upstream-") as cache:
        for paper, af, _, filled in jobs:
            folder = Path(cache) / paper.id  # one cache folder per paper, as upstream
            shutil.copytree(paper.folder, folder, dirs_exist_ok=True)
            (folder / af.path).write_text(filled, encoding="utf-8")
            test = (paper.folder / paper.test_script).read_text(encoding="utf-8")
            (folder / paper.test_script).write_text(test, encoding="utf-8")
            env_bin = _environment_bin(environments[paper.id])
            command = f"cd {folder} && timeout 60 {env_bin} {paper.test_script}"
            success, code, out, err = run_shell_command(command)
            passed += bool(check(success, code, out, err))
    return time.perf_counter() - start, passed


def _environment_bin(env: PythonEnv) -> str:
    """The harness's interpreter with the paper's built environment first on the path."""
    built = built_environment(env)
    if built is None:
        return sys.executable
    site = built.path / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return f"env PYTHONPATH={site / 'site-packages'} {sys.executable} -s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default="mini")
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the whole pset")
    parser.add_argument("--baseline", action="store_true", help="also time upstream's runner")
    parser.add_argument("--baseline-rounds", type=int, default=None)
    parser.add_argument("--fresh", action="store_true", help="no preloaded interpreter")
    parser.add_argument("--task", action="append", help="only these papers (repeatable)")
    args = parser.parse_args()

    root = resolve_target(args.target)
    nested = root / "researchcodebench"
    root = nested if nested.is_dir() else root
    pset = find_pset(root)
    assert pset is not None, f"{args.target}: no papers.yaml"
    papers = [p for p in load_papers(pset) if not args.task or p.id in args.task]
    planned, notes = planned_environments(pset, papers, None)
    statuses = anyio.run(check_environments, papers, planned, notes)
    for status in statuses.values():
        if status.unavailable:
            print(f"unavailable {status.paper}: {status.unavailable}", file=sys.stderr)
    runnable = [p for p in papers if not statuses[p.id].unavailable]
    environments = {p.id: statuses[p.id].env or planned[p.id] for p in runnable}
    jobs = reference_jobs(runnable)
    baseline = None
    source = ""
    theirs_passed: list[int] = []
    if args.baseline:
        run_shell, check, source = upstream_runner(pset.parent)

        def baseline() -> float:
            seconds, passed = upstream_round(jobs, environments, run_shell, check)
            theirs_passed.append(passed)
            return seconds

    rounds_b = args.baseline_rounds if args.baseline_rounds is not None else args.rounds
    out = anyio.run(
        grade_all,
        jobs,
        environments,
        args.parallel,
        args.rounds,
        not args.fresh,
        baseline,
        rounds_b,
    )
    for paper_id in out["needs_network"]:
        print(f"unavailable {paper_id}: needs network (at run time)", file=sys.stderr)
    n = len(jobs)  # less the papers that turned out to need network
    runnable = [p for p in runnable if p.id not in out["needs_network"]]
    ours = statistics.median(out["ours"]) / n
    runner = "fresh" if args.fresh else "preloaded"
    print(f"papers={len(runnable)} of {len(papers)} snippets={n} rounds={args.rounds}")
    print(f"parallel={args.parallel} cpus={os.cpu_count()} runner={runner} isolation=on")
    print(f"setup_seconds={out['setup']:.2f}")
    print(f"seconds_per_snippet={ours:.3f}  (median over rounds)")
    print(f"references_passed={n - len(out['failed']) // max(1, args.rounds)}/{n}")
    for name, run in out["failed"]:
        print(f"FAILED {name}: {run.failure()}", file=sys.stderr)
    if args.baseline:
        theirs = statistics.median(out["theirs"]) / n
        print(f"upstream_runner={source} rounds={len(out['theirs'])}")
        print(f"upstream_seconds_per_snippet={theirs:.3f}  (median over rounds)")
        print(f"upstream_references_passed={'/'.join(map(str, theirs_passed))} of {n}")
        print(f"speedup_vs_upstream={theirs / ours:.2f}")
    print(f"snippets_per_second={1 / ours:.2f}")
    sys.exit(1 if out["failed"] else 0)


if __name__ == "__main__":
    main()

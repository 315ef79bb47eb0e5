"""Run a paper's tests on completions: one protected sandbox per paper, runs in parallel.

Each paper gets one bwrap grader sandbox (`labcoat.grading.grader_session`), with the
pristine paper folder, tests and `*_ref.py` included, as its root-only /root, its
Python environment mounted read-only, and no network. Every test run copies that folder
to a fresh private directory under /tmp, writes the filled file, and runs
`python paper2code_test.py` there under a time limit as a user of its own, which is
killed with everything it started when the run ends (see `_runner.py`). Runs of all
papers share one bound on how many run at once (default: one per CPU).

Runs in flight at once each hold a slot: its own user, its own HOME (the same path for
every run of the slot, reset before each) and a share of the CPUs as thread counts. A
run's limits are CPU time (`timeout` seconds per thread it is given: the test's own
work, however loaded the machine is) and wall-clock time less the time it waited for a
CPU (`WALL_FACTOR` × `timeout`, for a run that waits without working); either marks it
timed out, its own failure class.

For speed, each paper sandbox starts, per slot, a preloaded interpreter (the runner's
`serve` mode) that imports what the tests need from outside the paper once, as the
slot's user with the slot's HOME and thread counts, and forks a child per run; the child
becomes the run exactly as above. If it cannot start or dies, runs fall back to a fresh
interpreter each (`preload=False` always does).

The outcome is the test process's report on a private channel, with a per-run secret
(see `_test_main.py`): what a run prints or how it exits cannot make it pass. A report
that claims a pass is checked here against the tests of the pristine script
(`_tests.py`): every one ran and succeeded, else the run fails and is flagged.

The model never sees these sandboxes: the agent's own sandbox (agent mode) holds the
masked repository without tests or reference code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import sniffio
from inspect_ai.util import SandboxUnavailableError

from labcoat._errors import LabcoatError
from labcoat.families.researchcodebench._environment import (
    PROBE_SCRIPT,
    MissingModulesError,
    missing_message,
    required_modules,
)
from labcoat.families.researchcodebench._failures import Failure, FailureKind, classify_failure
from labcoat.families.researchcodebench._papers import Paper
from labcoat.families.researchcodebench._tests import check_report, script_tests
from labcoat.grading import grader_session
from labcoat.grading._audit_guard import GUARD_SOURCE
from labcoat.sandbox import BwrapSession, Isolation, PythonEnv, thread_environment

DEFAULT_TIMEOUT = 60  # seconds per test run, upstream's --timeout_seconds
WALL_FACTOR = 3  # a run's wall-clock limit, in multiples of `timeout`
MEMORY_MB_PER_RUN = 2048  # a paper sandbox's memory cap: this per parallel run, plus one
OUTPUT_LIMIT = 64 * 1024  # bytes kept of each of stdout and stderr
RUN_UID_BASE = 2000  # slot i runs as uid 2000 + i
RUNNER_GRACE = 30  # seconds past the test's limit before the runner itself is given up
IDLE_CLOSE = 10.0  # seconds a shared pool keeps an unused paper sandbox
ZYGOTE_DIR = "/tmp/.labcoat-zygote-{slot}"  # root-only; the slot's preloaded runner
SLOT_HOME = "/tmp/.labcoat-home-{slot}"  # the slot's HOME, its user's
ZYGOTE_START_TIMEOUT = 300  # seconds to import the preloaded modules (torch can be slow)
SOCKET_PATH_MAX = 100  # bytes; AF_UNIX paths are limited to 108

# scripts that run inside the sandbox (never imported here)
_RUNNER = (Path(__file__).parent / "_runner.py").read_text(encoding="utf-8")
# the test process's script, after the in-sandbox guard it shares with PaperBench's checks
_TEST_MAIN = (
    GUARD_SOURCE + "\n\n" + (Path(__file__).parent / "_test_main.py").read_text(encoding="utf-8")
)


@dataclass(frozen=True)
class Watch:
    """Where the completion sits in the filled file (1-based, inclusive lines)."""

    file: str
    first_line: int
    last_line: int


@dataclass(frozen=True)
class TestRun:
    """One run of the paper's test script on a filled file."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    runtime_flags: tuple[str, ...] = ()
    isolation: str = "own user"
    """`own user` (a uid per run, all its processes killed after) or `shared user`."""
    runner: str = "preloaded"
    """`preloaded` (forked from the paper's preloaded interpreter) or `fresh` (a new one)."""
    report: dict[str, Any] | None = None
    """The test process's own report (tests run, failures, errors), None when it ended
    without one (it exited early, was killed, or crashed before reporting)."""
    limit: str | None = None
    """Which limit stopped a timed-out run: `cpu` or `wall`."""
    cpu_seconds: float | None = None
    network: tuple[str, ...] = ()
    """Network access tried by code other than the completion (the paper needs network)."""
    limits: tuple[float, float] = (DEFAULT_TIMEOUT, DEFAULT_TIMEOUT * WALL_FACTOR)
    """(CPU seconds, wall-clock seconds) the run was given."""
    refused: tuple[str, ...] = ()
    """Why the completion was refused before running (`_screen.py`); no test ran."""
    put_back: tuple[str, ...] = ()
    """What the completion changed in place that the reference block does not (`x`,
    `self.w_o`): this run put it back after every call of the block's function."""

    @property
    def passed(self) -> bool:
        """The report says tests ran and none failed, and nothing was flagged."""
        return not self.refused and not self.runtime_flags and claims_pass(self)

    @property
    def needs_network(self) -> bool:
        """It failed after code other than the completion tried to reach the network."""
        return bool(self.network) and not self.passed

    def failure(self) -> Failure | None:
        if self.passed:
            return None
        if self.refused:
            message = "refused before running: it " + "; ".join(self.refused)
            return Failure(FailureKind.INTEGRITY, message=message)
        return self._failure()

    def _failure(self) -> Failure:
        if self.timed_out:
            if self.limit == "cpu":
                message = f"the test run used more than {self.limits[0]:g} s of CPU time"
            else:
                message = (
                    f"the test run took more than {self.limits[1]:g} s (wall clock, less "
                    "the time it waited for a CPU)"
                )
            return Failure(FailureKind.TIMEOUT, message=message)
        if self.runtime_flags:
            return Failure(FailureKind.INTEGRITY, message="; ".join(self.runtime_flags))
        found = classify_failure(self.exit_code, self.stdout, self.stderr)
        if self.report is None:
            if found is not None and found.kind not in (FailureKind.WRONG_RESULT,):
                return found
            return Failure(
                FailureKind.CRASH,
                message=f"the test process ended without its report (exit code {self.exit_code})",
            )
        if found is not None:
            return found
        report = self.report
        if int(report.get("failures", 0)):
            return Failure(FailureKind.WRONG_RESULT, message="unittest reported a failure")
        if int(report.get("ran", 0)) == 0:
            return Failure(FailureKind.CRASH, message="no test ran")
        return Failure(FailureKind.CRASH, message=f"exit code {self.exit_code}")


def claims_pass(run: TestRun) -> bool:
    """What the test process says: its report has tests run and none failed, and it
    exited cleanly and in time (the runner still checks the report: `check_report`)."""
    report = run.report
    return (
        report is not None
        and not run.timed_out
        and run.exit_code == 0
        and report.get("exit_code") == 0
        and report.get("escaped") is None
        and int(report.get("ran", 0)) > 0
        and int(report.get("failures", 0)) == 0
        and int(report.get("errors", 0)) == 0
    )


@dataclass
class _Paper:
    """A paper's grader sandbox, opened once by whichever run needs it first."""

    lock: anyio.Lock = field(default_factory=anyio.Lock)
    modules: list[str] = field(default_factory=list)  # what the tests import from outside
    stack: AsyncExitStack | None = None
    session: BwrapSession | None = None
    error: LabcoatError | None = None
    zygotes: dict[int, Path] = field(default_factory=dict)  # slot -> its runner's socket
    zygote_errors: dict[int, str] = field(default_factory=dict)
    in_flight: int = 0
    shared_user_turn: anyio.Lock = field(default_factory=anyio.Lock)
    """Held by the one run in flight when the sandbox has one user for all runs: with no
    uid to keep two runs apart, each could read and change the other's files."""
    last_used: float = field(default_factory=time.monotonic)

    async def close(self) -> None:
        stack, self.stack, self.session = self.stack, None, None
        self.zygotes = {}
        if stack is not None:
            with anyio.CancelScope(shield=True):
                await stack.aclose()


class GradingPool:
    """Grader sandboxes by paper and environment, and the bound on parallel runs.

    Use as `async with GradingPool() as pool:`, or `shared_pool()` inside an Inspect
    run. `idle_close`: None keeps sandboxes until `aclose()`; 0 closes a paper's sandbox
    as soon as no run uses it; more (asyncio only) closes it after that many idle
    seconds, and every sandbox when the event loop shuts down.
    """

    def __init__(
        self,
        max_parallel: int | None = None,
        *,
        memory_mb: int | None = None,
        idle_close: float | None = None,
        preload: bool = True,
    ) -> None:
        self.max_parallel = max(1, max_parallel or os.cpu_count() or 1)
        # threads per run = the CPUs it is given
        self.threads = max(1, (os.cpu_count() or 1) // self.max_parallel)
        # the runs in flight and the preloaded interpreter share the sandbox's cap
        self.memory_mb = memory_mb or MEMORY_MB_PER_RUN * (self.max_parallel + 1)
        self.preload = preload
        self._limit = anyio.Semaphore(self.max_parallel)
        self._free_slots = list(range(self.max_parallel))
        self._papers: dict[tuple[Path, PythonEnv], _Paper] = {}
        self._idle_close = idle_close
        self._reaper: asyncio.Task[None] | None = None
        # (paper, reference files, where its block sits) -> the reference's own run
        self._reference_runs: dict[tuple[Path, str, Watch], TestRun] = {}

    async def __aenter__(self) -> GradingPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        papers, self._papers = list(self._papers.values()), {}
        for paper in papers:
            await paper.close()

    # --- the paper's sandbox -----------------------------------------------------------

    async def check(self, paper: Paper, environment: PythonEnv | None = None) -> None:
        """Open the paper's sandbox (building its environment); MissingModulesError when
        the tests import modules the environment lacks."""
        async with self._use(paper, environment or PythonEnv()):
            pass

    @asynccontextmanager
    async def _use(self, paper: Paper, environment: PythonEnv) -> AsyncIterator[_Paper]:
        key = (paper.folder, environment)
        entry = self._papers.setdefault(key, _Paper())
        entry.in_flight += 1
        try:
            async with entry.lock:
                if entry.session is None and entry.error is None:
                    await self._open(entry, paper, environment)
            if entry.error is not None:
                raise entry.error
            assert entry.session is not None
            yield entry
        finally:
            entry.in_flight -= 1
            entry.last_used = time.monotonic()
            await self._after_use(key, entry)

    async def _open(self, entry: _Paper, paper: Paper, environment: PythonEnv) -> None:
        stack = AsyncExitStack()
        try:
            session = await stack.enter_async_context(
                grader_session(
                    protected=paper.folder,
                    workspace=None,
                    environment=environment,
                    memory_mb=self.memory_mb,
                )
            )
            entry.modules = await self._check_modules(session, paper, environment)
        except LabcoatError as exc:
            await stack.aclose()
            entry.error = exc  # an environment that cannot be built stays broken
            return
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stack.aclose()
            raise
        entry.stack, entry.session = stack, session
        self._start_reaper()

    async def _check_modules(
        self, session: BwrapSession, paper: Paper, environment: PythonEnv
    ) -> list[str]:
        """The modules the tests import from outside the paper, all found in its env."""
        needed = await anyio.to_thread.run_sync(required_modules, paper)
        if not needed:
            return []
        result = await session.exec(
            ["python3", "-c", PROBE_SCRIPT, *sorted(needed)],
            cwd="/",
            user=_root(session),
            timeout=120,
        )
        if not result.success:
            raise LabcoatError(
                f"paper {paper.id}: could not inspect its Python environment: "
                f"{(result.stderr or result.stdout).strip()[-2000:]}"
            )
        missing = {name: needed[name] for name in json.loads(result.stdout)}
        if missing:
            raise MissingModulesError(missing_message(paper, missing, environment), missing)
        return sorted(needed)

    def _slot_config(self, session: BwrapSession, slot: int) -> dict[str, Any]:
        return {
            "uid": RUN_UID_BASE + slot if _root(session) else None,
            "home": SLOT_HOME.format(slot=slot),
            "threads": self.threads,
            "thread_env": thread_environment(self.threads),
        }

    async def _start_zygote(
        self, entry: _Paper, session: BwrapSession, modules: list[str], slot: int
    ) -> None:
        """Start the slot's preloaded runner; on any trouble, note why and run without it."""
        folder = ZYGOTE_DIR.format(slot=slot)
        host = session.host_path(f"{folder}/sock")
        if host is None or len(str(host).encode()) > SOCKET_PATH_MAX:
            entry.zygote_errors[slot] = f"socket path too long: {host}"
            return
        root = _root(session)
        mkdir = ["mkdir", "-m", "700", folder]
        if session.isolation is Isolation.SEPARATE_USERS:
            # the harness connects from the host, where it is the sandbox's agent (the
            # runs are other uids): the folder is the agent's, still closed to the runs
            mkdir = ["sh", "-c", f"{shlex.join(mkdir)} && chown agent:agent {folder}"]
        made = await session.exec(mkdir, cwd="/", user=root)
        if not made.success:
            entry.zygote_errors[slot] = made.stderr.strip()
            return
        config = self._slot_config(session, slot)
        pid = await session.spawn(
            ["python3", "-c", _RUNNER, "serve", folder, json.dumps(modules), json.dumps(config)],
            log=f"{folder}/log",
            cwd="/tmp",
            user=root,
        )
        with anyio.move_on_after(ZYGOTE_START_TIMEOUT):
            while not host.exists():
                running, code = await session.job_status(pid)
                if not running:
                    entry.zygote_errors[slot] = f"the preloaded runner exited ({code})"
                    return
                await anyio.sleep(0.02)
            entry.zygotes[slot] = host
            return
        entry.zygote_errors[slot] = "the preloaded runner did not start in time"

    # --- runs ---------------------------------------------------------------------------

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[int]:
        async with self._limit:
            slot = self._free_slots.pop()
            try:
                yield slot
            finally:
                self._free_slots.append(slot)

    async def grade(
        self,
        paper: Paper,
        files: dict[str, str],
        *,
        environment: PythonEnv | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        watch: Watch | None = None,
        reference: tuple[dict[str, str], Watch] | None = None,
    ) -> TestRun:
        """Run the paper's tests with `files` (paths in the paper folder -> text) replaced.

        `timeout`: CPU seconds per thread the run is given (its wall-clock limit is
        `WALL_FACTOR` times that). `reference`: the files with the reference block in its
        place, and where it sits: when the completion changes in place arrays that the
        reference block leaves alone (`_test_main.py`, "what the block changes in place"),
        the tests run again with those put back after each call of the block's function,
        and that run decides. A failed run in which the paper's own code tried the
        network is the paper's need (the sample cannot run here) only if the reference's
        run needs it too: else the completion made it so, and it is a failure, flagged."""
        run = await self._run(paper, files, environment, timeout, watch, ())
        if run.needs_network and reference is not None:
            oracle = await self._reference_run(paper, reference, environment, timeout)
            if not oracle.needs_network:
                flag = "made the paper's own code try the network, which the reference does not"
                return replace(run, network=(), runtime_flags=(*run.runtime_flags, flag))
        changed = tuple((run.report or {}).get("mutated") or ())
        if not changed or reference is None or not run.passed:
            return run
        oracle = await self._reference_run(paper, reference, environment, timeout)
        reference_changes = frozenset((oracle.report or {}).get("mutated") or ())
        beyond = tuple(sorted(set(changed) - reference_changes))
        if not beyond:
            return run
        again = await self._run(paper, files, environment, timeout, watch, beyond)
        # what it changes once the first changes are put back: a block that changes
        # something else when it sees its change undone
        allowed = reference_changes | set(beyond)
        more = sorted(set((again.report or {}).get("mutated") or ()) - allowed)
        flags = (f"changed in place {', '.join(more)} once what it changed was put back",)
        return replace(
            again, put_back=beyond, runtime_flags=again.runtime_flags + flags * bool(more)
        )

    async def _reference_run(
        self,
        paper: Paper,
        reference: tuple[dict[str, str], Watch],
        environment: PythonEnv | None,
        timeout: float,
    ) -> TestRun:
        """The tests with the reference block in place (no agent code), once per snippet."""
        key = (paper.folder, json.dumps(reference[0], sort_keys=True), reference[1])
        if key not in self._reference_runs:
            files, watch = reference
            self._reference_runs[key] = await self._run(
                paper, files, environment, timeout, watch, ()
            )
        return self._reference_runs[key]

    async def _run(
        self,
        paper: Paper,
        files: dict[str, str],
        environment: PythonEnv | None,
        timeout: float,
        watch: Watch | None,
        protect: tuple[str, ...],
    ) -> TestRun:
        async with self._use(paper, environment or PythonEnv()) as entry:
            assert entry.session is not None
            root = _root(entry.session)
            one_user = entry.shared_user_turn if root is None else contextlib.nullcontext()
            async with one_user, self._slot() as slot:
                if self.preload and slot not in entry.zygotes and slot not in entry.zygote_errors:
                    await self._start_zygote(entry, entry.session, entry.modules, slot)
                wall = timeout * WALL_FACTOR
                request: dict[str, Any] = {
                    "source": "/root",
                    "files": files,
                    "script": paper.test_script,
                    "cpu_seconds": max(1, round(timeout * self.threads)),
                    "wall_seconds": wall,
                    "slot": self._slot_config(entry.session, slot),
                    "test_main": _TEST_MAIN,
                    "watch": watch.__dict__ if watch else None,
                    "output_limit": OUTPUT_LIMIT,
                    "modules": entry.modules,
                    "protect": list(protect),
                }
                data = None
                if slot in entry.zygotes:
                    data = await self._preloaded(entry, slot, request)
                runner = "preloaded"
                if data is None:
                    data = await self._fresh(entry.session, request)
                    runner = "fresh"
        if "error" in data:
            raise LabcoatError(f"paper {paper.id}: the test runner failed: {data['error']}")
        run = TestRun(
            exit_code=data["exit_code"],
            stdout=data["stdout"],
            stderr=data["stderr"],
            timed_out=data["timed_out"],
            seconds=data["seconds"],
            runtime_flags=tuple(data["runtime_flags"]),
            isolation="own user" if root else "shared user",
            runner=runner,
            report=data.get("report"),
            limit=data.get("limit"),
            cpu_seconds=data.get("cpu_seconds"),
            network=tuple(data.get("network") or ()),
            limits=(float(request["cpu_seconds"]), float(wall)),
        )
        if not claims_pass(run):
            return run
        # the test process ran the completion: what its report claims is checked against
        # the script's own tests, read here from the pristine folder
        # (on this thread: CPython 3.11's parser is not thread-safe, and two parses at once
        # in worker threads fail with "AST constructor recursion depth mismatch")
        expected = script_tests(paper.folder / paper.test_script)
        problems = check_report(run.report or {}, expected)
        flags = tuple(f"sent a report the script's tests contradict: {p}" for p in problems)
        return replace(run, runtime_flags=run.runtime_flags + flags) if flags else run

    async def _preloaded(
        self, entry: _Paper, slot: int, request: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The run through the slot's preloaded runner; None if that runner is gone."""
        try:
            with anyio.fail_after(request["wall_seconds"] + RUNNER_GRACE):
                async with await anyio.connect_unix(entry.zygotes[slot]) as stream:
                    await stream.send(json.dumps(request).encode() + b"\n")
                    reply = bytearray()
                    with contextlib.suppress(anyio.EndOfStream):
                        while True:
                            reply += await stream.receive()
        except TimeoutError:
            return _no_result("the test runner did not return", timed_out=True)
        except OSError as exc:
            del entry.zygotes[slot]
            entry.zygote_errors[slot] = f"the preloaded runner is gone: {exc}"
            return None
        if not reply:  # it died during the run
            del entry.zygotes[slot]
            entry.zygote_errors[slot] = "the preloaded runner died"
            return None
        return json.loads(reply)

    async def _fresh(self, session: BwrapSession, request: dict[str, Any]) -> dict[str, Any]:
        """The run by a new runner process, tests in a new interpreter."""
        for attempt in (1, 2):
            try:
                result = await session.exec(
                    ["python3", "-I", "-S", "-c", _RUNNER, "once"],
                    input=json.dumps(request),
                    cwd="/tmp",
                    user=_root(session),
                    timeout=request["wall_seconds"] + RUNNER_GRACE,
                )
            except SandboxUnavailableError as exc:
                # the sandbox died (memory?); it restarts on the next request
                if attempt == 2:
                    return _no_result(f"the grading sandbox stopped: {exc}")
                continue
            except TimeoutError:
                return _no_result("the test runner did not return", timed_out=True)
            if not result.success:
                return {"error": f"exit {result.returncode}: {result.stderr.strip()[-2000:]}"}
            return json.loads(result.stdout)
        raise AssertionError("unreachable")

    # --- closing idle sandboxes (shared pools) --------------------------------------------

    def _start_reaper(self) -> None:
        if not self._idle_close or (self._reaper is not None and not self._reaper.done()):
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _after_use(self, key: tuple[Path, PythonEnv], entry: _Paper) -> None:
        # idle_close == 0: no background task; close a sandbox as soon as it is unused
        if self._idle_close == 0 and entry.in_flight == 0:
            if self._papers.get(key) is entry:
                del self._papers[key]
            await entry.close()

    async def _reap(self) -> None:
        assert self._idle_close is not None
        try:
            while self._papers:
                await anyio.sleep(min(1.0, self._idle_close))
                now = time.monotonic()
                for key, entry in list(self._papers.items()):
                    idle = now - entry.last_used >= self._idle_close
                    if entry.in_flight == 0 and not entry.lock.locked() and idle:
                        del self._papers[key]
                        await entry.close()
        except BaseException:
            # the event loop is shutting down: nothing may outlive it
            with anyio.CancelScope(shield=True):
                await self.aclose()
            raise
        finally:
            self._reaper = None


def _no_result(message: str, *, timed_out: bool = False) -> dict[str, Any]:
    return {
        "exit_code": None,
        "stdout": "",
        "stderr": message,
        "timed_out": timed_out,
        "limit": "wall" if timed_out else None,
        "seconds": 0.0,
        "runtime_flags": [],
        "report": None,
    }


def _root(session: BwrapSession) -> str | None:
    return "root" if "root" in session.users else None


def _async_library() -> str | None:
    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GradingPool] = (
    weakref.WeakKeyDictionary()
)


def shared_pool() -> GradingPool:
    """The pool of the running event loop, shared by every researchcodebench task in it."""
    if _async_library() != "asyncio":  # no background reaper outside asyncio
        return GradingPool(idle_close=0.0)
    loop = asyncio.get_running_loop()
    pool = _shared.get(loop)
    if pool is None:
        pool = _shared[loop] = GradingPool(idle_close=IDLE_CLOSE)
    return pool

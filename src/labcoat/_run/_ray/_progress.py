"""Live progress on the launcher, across nodes: a table on a terminal, lines otherwise."""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console, RenderableType
from rich.console import Group as Renderables  # not the plan's Group
from rich.live import Live
from rich.table import Table

if TYPE_CHECKING:
    from labcoat._run._ray._merge import ShardState
    from labcoat._run._ray._plan import Group, SampleJob
    from labcoat._run._ray._worker import AttemptOutcome

JobKey = tuple[str, str, int]


class LaunchView(Protocol):
    """What progress reads of a launch (the driver's `RayRun`): typed here, so that this
    module, which the driver imports, does not import the driver."""

    @property
    def groups(self) -> list[Group]: ...
    @property
    def states(self) -> dict[JobKey, ShardState]: ...
    @property
    def outcomes(self) -> dict[JobKey, AttemptOutcome]: ...
    @property
    def failures(self) -> dict[JobKey, str]: ...
    @property
    def resumed(self) -> int: ...


class Progress:
    def __init__(self, run: LaunchView, *, enabled: bool = True) -> None:
        self._run = run
        self._enabled = enabled
        self._console = Console(file=sys.stderr)
        self._live: Live | None = None
        self._start = time.monotonic()
        self._done: Counter[str] = Counter()
        self._errors: Counter[str] = Counter()
        self._board: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._running: Counter[str] = Counter()
        self._queued: Counter[str] = Counter()
        self._hosts: Counter[str] = Counter()
        self._slots: dict[str, dict[str, int]] = {}
        self._count = 0
        self._total = sum(len(g.jobs) for g in run.groups)
        self._finished_count = run.resumed
        self._last_board = 0.0
        self._budget = ""
        """The run's spend against its budget, as the coordinator last said."""

    def start(self, failed_early: int) -> None:
        if not self._enabled:
            return
        if self._run.resumed:
            rest = "nothing left to run" if self._run.resumed == self._total else "running the rest"
            self._console.print(
                f"ray: {self._run.resumed} of {self._total} sample(s) already finished "
                f"in this log dir; {rest}"
            )
        for key, reason in self._run.failures.items():
            self._console.print(  # a task id and a reason: plain text, never markup
                f"ray: {key[1]} (epoch {key[2]}): {reason}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        if self._console.is_terminal:
            self._live = Live(self._render(), console=self._console, refresh_per_second=2)
            self._live.start()

    def finished(self, job: SampleJob, outcome: AttemptOutcome | None, failure: str | None) -> None:
        self._finished_count += 1
        title = f"{job.family}/{job.agent}"
        self._done[title] += 1
        ok = outcome is not None and outcome.status == "success"
        if not ok:
            self._errors[title] += 1
        if not self._enabled or self._live is not None:
            return
        where = (
            f" on {outcome.host} ({outcome.node_id[:8]}) in {outcome.seconds:.1f} s"
            if (outcome)
            else ""
        )
        status = outcome.status if outcome else "failed"
        detail = (
            f": {outcome.error}"
            if outcome and outcome.error
            else (f": {failure}" if failure else "")
        )
        spend = f" [budget: {self._budget}]" if self._budget else ""
        self._console.print(
            f"[{self._finished_count}/{self._total}] {title} {job.sample_id} "
            f"(epoch {job.epoch}): {status}{where}{detail}{spend}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def retrying(self, job: SampleJob, why: str) -> None:
        """An attempt ended without its log and runs again, ahead of new work."""
        if not self._enabled or self._live is not None:
            return
        self._console.print(
            f"{job.family}/{job.agent} {job.sample_id} (epoch {job.epoch}): {why}; "
            "retrying it first",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def update(
        self, coordinator: Any, in_flight: Iterable[SampleJob], pending: Iterable[SampleJob]
    ) -> None:
        if not self._enabled:
            return
        import ray

        now = time.monotonic()
        if now - self._last_board > 1.0:
            self._last_board = now
            # the coordinator restarting: keep the last view
            with contextlib.suppress(Exception):
                self._board, self._slots, (_, self._budget) = ray.get(
                    [
                        coordinator.board.remote(),
                        coordinator.slots.remote(),
                        coordinator.budget_progress.remote(),
                    ],
                    timeout=5,
                )
        if self._live is None:
            return
        self._running.clear()
        self._queued.clear()
        self._hosts.clear()
        for job in in_flight:
            title = f"{job.family}/{job.agent}"
            entry = self._board.get(job.key)
            if entry is None:
                self._queued[title] += 1
            else:
                self._running[title] += 1
                self._hosts[f"{entry['host']} {entry['node_id'][:8]}"] += 1
        for job in pending:
            self._queued[f"{job.family}/{job.agent}"] += 1
        self._live.update(self._render())

    def _render(self) -> Renderables:
        table = Table(title=f"labcoat --ray ({time.monotonic() - self._start:.0f} s)")
        for column in ("task", "done", "running", "queued", "retried", "errors"):
            table.add_column(column, justify="left" if column == "task" else "right")
        retried: Counter[str] = Counter()
        for key, entry in self._board.items():
            if entry.get("attempts", 0) > 1:
                retried[_title_of(self._run, key)] += 1
        for group in self._run.groups:
            title = group.title
            done = self._done[title] + sum(
                1 for j in group.jobs if self._run.states.get(j.key) and
                self._run.states[j.key].finished and j.key not in self._run.outcomes
            )  # fmt: skip
            table.add_row(
                title,
                f"{min(done, len(group.jobs))}/{len(group.jobs)}",
                str(self._running[title]),
                str(self._queued[title]),
                str(retried[title]),
                str(self._errors[title]),
            )
        nodes = ", ".join(f"{host}: {n}" for host, n in sorted(self._hosts.items()))
        slots = ", ".join(
            f"{m}: {s['in_use']}/{s['limit']} (waiting {s['waiting']})"
            for m, s in sorted(self._slots.items())
        )
        lines: list[RenderableType] = [table, f"running on: {nodes or '-'}"]
        if slots:
            lines.append(f"model slots: {slots}")
        if self._budget:
            lines.append(f"budget: {self._budget}")
        return Renderables(*lines)

    def stop(self) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.stop()
            self._live = None

    def summary(self) -> None:
        if not self._enabled:
            return
        hosts = {o.node_id for o in self._run.outcomes.values()}
        retried = sum(
            1
            for s in self._run.states.values()
            if s.finished and len(s.retried()) > 0 and s.job.key in self._run.outcomes
        )
        self._console.print(
            f"ray: {len(self._run.outcomes)} sample(s) ran on {len(hosts)} node(s) in "
            f"{time.monotonic() - self._start:.1f} s; {self._run.resumed} resumed from "
            f"earlier launches; {retried} retried; {len(self._run.failures)} failed in Ray"
        )


def _title_of(run: LaunchView, key: JobKey) -> str:
    group = next((g for g in run.groups if g.key == key[0]), None)
    return group.title if group else "?"

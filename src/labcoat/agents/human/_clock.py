"""A person's working clock: clock time runs from the first attach, working time only
while the clock is started (`task stop` pauses it, `task start` resumes it)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class WorkingClock:
    budget_seconds: float | None
    """Working time allowed (the task's own time budget); None: until submitted."""
    now: object = field(default=time.time, repr=False)
    started_at: float | None = None
    """Wall time of the first start (the first attach)."""
    running_since: float | None = None
    worked: float = 0.0
    pauses: list[dict[str, float]] = field(default_factory=list)

    def _now(self) -> float:
        return self.now()  # type: ignore[operator]

    @property
    def running(self) -> bool:
        return self.running_since is not None

    def start(self) -> bool:
        """Start or resume; False when it was already running."""
        if self.running:
            return False
        now = self._now()
        if self.started_at is None:
            self.started_at = now
        elif self.pauses and "resumed" not in self.pauses[-1]:
            self.pauses[-1]["resumed"] = now
        self.running_since = now
        return True

    def stop(self, *, final: bool = False) -> bool:
        """Pause (`final`: the session's end, not a pause); False when it was not running."""
        if self.running_since is None:
            return False
        now = self._now()
        self.worked += now - self.running_since
        self.running_since = None
        if not final:
            self.pauses.append({"paused": now})
        return True

    def working_seconds(self) -> float:
        running = self._now() - self.running_since if self.running_since is not None else 0.0
        return self.worked + running

    def clock_seconds(self) -> float:
        return 0.0 if self.started_at is None else self._now() - self.started_at

    def left(self) -> float | None:
        if self.budget_seconds is None:
            return None
        return max(0.0, self.budget_seconds - self.working_seconds())

    def over_budget(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def status(self) -> str:
        state = "running" if self.running else "paused" if self.started_at else "not started"
        text = f"clock {state}; working time {_hms(self.working_seconds())}"
        if self.budget_seconds is not None:
            text += f" of {_hms(self.budget_seconds)} ({_hms(self.left() or 0)} left)"
        return text + f"; clock time {_hms(self.clock_seconds())}"

    def record(self) -> dict[str, object]:
        return {
            "working_seconds": round(self.working_seconds(), 3),
            "clock_seconds": round(self.clock_seconds(), 3),
            "budget_seconds": self.budget_seconds,
            "started_at": self.started_at,
            "pauses": self.pauses,
        }


def _hms(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

"""Budgets of a research run: the limits that stop it, and what the agent is told of them.

The task's own time budget (sample metadata `time_limit_minutes`) applies unless the
user set a sample time limit (`labcoat eval --time-limit`, Inspect's `--time-limit`),
which then replaces it. Other limits come from the user. Every step is recorded with
elapsed time, working time, tokens and cost, for curves over time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspect_ai.util import (
    Limit,
    LimitExceededError,
    cost_limit,
    message_limit,
    sample_limits,
    time_limit,
    token_limit,
    working_limit,
)
from inspect_ai.util import store as sample_store

from labcoat._util.progress import run_progress
from labcoat._util.store_keys import AGENT_BUDGET_KEY, STEPS_KEY


def _fmt_seconds(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes >= 2 else f"{seconds:.0f} s"


@dataclass
class AgentLimitsLeft:
    time: float | None = None
    working: float | None = None
    tokens: int | None = None
    cost: float | None = None
    messages: int | None = None
    progress_every: int = 10
    _steps: int = field(default=0, init=False)
    _nodes: dict[str, Limit] = field(default_factory=dict, init=False)

    @classmethod
    def for_sample(
        cls, metadata: dict[str, Any], progress_every: int = 10, **limits: Any
    ) -> AgentLimitsLeft:
        """The task's time budget unless the run already has a sample time limit."""
        budget = cls(progress_every=progress_every, **limits)
        task_minutes = metadata.get("time_limit_minutes")
        if budget.time is None and task_minutes and _sample_limit("time") is None:
            budget.time = float(task_minutes) * 60
        return budget

    def limits(self) -> list[Limit]:
        """Inspect limits scoped to the agent, for the ones set.

        Only the innermost message limit is checked (Inspect's rule), so an unset one
        here would hide the sample's: ours is applied only when set, and then as the
        lower of ours and the sample's.
        """
        self._nodes = {}
        if self.time is not None:
            self._nodes["time"] = time_limit(self.time)
        if self.working is not None:
            self._nodes["working"] = working_limit(self.working)
        if self.tokens is not None:
            self._nodes["token"] = token_limit(self.tokens)
        if self.cost is not None:
            self._nodes["cost"] = cost_limit(self.cost)
        if self.messages is not None:
            self._nodes["message"] = message_limit(int(self.effective()["message"] or 0))
        return list(self._nodes.values())

    def check_messages(self, count: int) -> None:
        """Stop before a model call when the run already holds the message limit.

        `count` is every message of the run, those handed off with the context too:
        `--message-limit` bounds the run, not only its current conversation.
        """
        limit = self.effective()["message"]
        if limit is not None and count >= limit:
            raise LimitExceededError(
                "message",
                value=count,
                limit=int(limit),
                message=f"Exceeded message limit: {int(limit):,}",
                source=self._nodes.get("message"),
            )

    def effective(self) -> dict[str, float | None]:
        """The binding limit of each kind: ours or the sample's, whichever is lower."""
        ours = {
            "time": self.time,
            "working": self.working,
            "token": self.tokens,
            "cost": self.cost,
            "message": self.messages,
        }
        out: dict[str, float | None] = {}
        for kind, value in ours.items():
            sample = _sample_limit(kind)
            candidates = [v for v in (value, sample) if v is not None]
            out[kind] = min(candidates) if candidates else None
        return out

    def record(self) -> dict[str, float | None]:
        """Put the effective limits in the sample store, for the score's provenance: the
        sample limits record only Inspect's, not the ones the agent applies itself."""
        limits = self.effective()
        sample_store().set(AGENT_BUDGET_KEY, limits)
        return limits

    def status(self, progress: dict[str, Any]) -> str:
        """One line on where the run stands against its budget."""
        limits = self.effective()
        parts = [f"step {self._steps}"]
        elapsed = progress.get("elapsed_seconds")
        if elapsed is not None:
            text = f"elapsed {_fmt_seconds(elapsed)}"
            if limits["time"]:
                left = _fmt_seconds(max(0.0, limits["time"] - elapsed))
                text += f" of {_fmt_seconds(limits['time'])} ({left} left)"
            parts.append(text)
        if limits["working"] and progress.get("working_seconds") is not None:
            left = max(0.0, limits["working"] - progress["working_seconds"])
            parts.append(f"working time left {_fmt_seconds(left)}")
        if progress.get("tokens") is not None:
            text = f"tokens {progress['tokens']:,}"
            if limits["token"]:
                text += f" of {int(limits['token']):,}"
            parts.append(text)
        if limits["cost"] and progress.get("cost") is not None:
            parts.append(f"cost ${progress['cost']:.2f} of ${limits['cost']:.2f}")
        return "Budget status: " + "; ".join(parts) + "."

    def record_step(self, final: bool = False) -> str | None:
        """Record this step; every `progress_every` steps return a status to tell the agent."""
        self._steps += 1
        progress = run_progress()
        entry = {"step": self._steps, "final": final, **progress}
        sample_store().set(STEPS_KEY, [*sample_store().get(STEPS_KEY, []), entry])
        if not final and self.progress_every and self._steps % self.progress_every == 0:
            return self.status(progress)
        return None


def _sample_limit(kind: str) -> float | None:
    try:
        limits = sample_limits()
    except RuntimeError:
        return None
    value = getattr(limits, kind).limit
    return float(value) if value is not None else None

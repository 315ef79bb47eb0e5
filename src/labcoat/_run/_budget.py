"""Campaign budgets: dollars, tokens and GPU-hours for a whole run, across its resumes.

`Tally` is the one account of a run: what the log folder's ledger says was spent (this
launch and every earlier one), and what each running sample holds. It decides whether a
sample may start (fail closed: only within what is left, its per-sample cap reserved)
and says when the budget is spent. One process owns it: the launcher locally, the
coordinator actor on Ray.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.util import LimitExceededError

DIMENSIONS = ("usd", "tokens", "gpu_seconds")
NOT_STARTED = "not started: budget"
"""How a sample the budget did not let start is marked (its log's error, the tables)."""
OPTION = {"usd": "--budget-usd", "tokens": "--budget-tokens", "gpu_seconds": "--budget-gpu-hours"}


@dataclass(frozen=True)
class CampaignBudget:
    """The limits of a run as a whole (None: no limit of that kind)."""

    usd: float | None = None
    tokens: int | None = None
    gpu_hours: float | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.usd, self.tokens, self.gpu_hours))

    def limits(self) -> dict[str, float]:
        """The limits in ledger units (GPU-hours as GPU-seconds)."""
        values = {
            "usd": self.usd,
            "tokens": self.tokens,
            "gpu_seconds": None if self.gpu_hours is None else self.gpu_hours * 3600,
        }
        return {k: float(v) for k, v in values.items() if v is not None}

    def to_json(self) -> dict[str, float | int | None]:
        return {"usd": self.usd, "tokens": self.tokens, "gpu_hours": self.gpu_hours}


def fmt(dimension: str, value: float) -> str:
    if dimension == "usd":
        return f"${value:,.2f}"
    if dimension == "tokens":
        return f"{value:,.0f} tokens"
    return f"{value / 3600:,.2f} GPU-hours"


class BudgetLimitError(LimitExceededError):
    """The run's budget is spent: a running sample ends as at a per-sample limit (its
    agent stops, the sample is scored)."""

    stop_type = "budget"

    def __init__(self, reason: str, value: float = 0.0, limit: float = 0.0) -> None:
        super().__init__("custom", value=value, limit=limit, message=f"run budget spent: {reason}")


class NotStartedError(LimitExceededError):
    """A sample refused at its start: the budget cannot cover it. Raised before its
    sandbox is made, so it ran nothing; its log records it with `NOT_STARTED`."""

    def __init__(self, reason: str) -> None:
        super().__init__("custom", value=0.0, limit=0.0, message=f"{NOT_STARTED}: {reason}")


def is_not_started(message: str | None) -> bool:
    return bool(message) and NOT_STARTED in str(message)


def zero() -> dict[str, float]:
    return dict.fromkeys(DIMENSIONS, 0.0)


@dataclass
class Hold:
    """A running sample's reservation: its per-sample caps, less what it has spent."""

    need: dict[str, float]
    spent: dict[str, float] = field(default_factory=zero)

    def reserved(self, dimension: str) -> float:
        return max(0.0, self.need.get(dimension, 0.0) - self.spent[dimension])


class Tally:
    """Spend so far (from the ledger's records) and the running samples' holds."""

    def __init__(
        self, budget: CampaignBudget, records: Iterable[dict[str, Any]] = (), launch: str = ""
    ) -> None:
        self.budget = budget
        self.launch = launch
        self.earlier: dict[str, float] | None = None
        """What launches before this one spent in the log folder (spend before this
        launch's first record)."""
        self.spent = zero()
        self.by_model: dict[str, dict[str, float]] = {}
        self.by_family: dict[str, dict[str, float]] = {}
        self.unpriced: set[str] = set()
        self.holds: dict[str, Hold] = {}
        self.started = 0
        self.not_started = 0
        for record in records:
            self.add(record)
        if self.earlier is None:
            self.earlier = dict(self.spent)

    def add(self, record: dict[str, Any]) -> None:
        """Count one ledger record (records that are not spend are skipped)."""
        if self.earlier is None and self.launch and record.get("launch") == self.launch:
            self.earlier = dict(self.spent)
        model = record.get("model")
        if model and "usd" in record and record["usd"] is None and record.get("tokens"):
            self.unpriced.add(str(model))  # tokens without a price: spend unknown
        for dimension in DIMENSIONS:
            value = record.get(dimension)
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            self.spent[dimension] += value
            for key, table in ((model, self.by_model), (record.get("family"), self.by_family)):
                if key:
                    table.setdefault(str(key), zero())[dimension] += value
            hold = self.holds.get(str(record.get("attempt", "")))
            if hold is not None:
                hold.spent[dimension] += value

    def exhausted(self) -> str | None:
        """Why nothing more may be spent (None: there is budget left)."""
        limits = self.budget.limits()
        if "usd" in limits and self.unpriced:
            return (
                f"the price of {sorted(self.unpriced)[0]} is unknown, so its spend cannot be "
                "counted (--budget-usd fails closed)"
            )
        for dimension, limit in limits.items():
            if self.spent[dimension] >= limit:
                return (
                    f"{fmt(dimension, self.spent[dimension])} of {fmt(dimension, limit)} "
                    f"spent ({OPTION[dimension]})"
                )
        return None

    def admit(self, attempt: str, need: dict[str, float]) -> tuple[str, str]:
        """("start", ""), ("wait", why) while running samples' reservations hold what it
        needs, or ("refuse", why) when what is left cannot cover it."""
        reason = self.exhausted()
        if reason is not None:
            return "refuse", reason
        for dimension, limit in self.budget.limits().items():
            left = limit - self.spent[dimension]
            wanted = need.get(dimension, 0.0)
            if wanted > left:
                return "refuse", (
                    f"its per-sample cap of {fmt(dimension, wanted)} is more than the "
                    f"{fmt(dimension, left)} left of {fmt(dimension, limit)} ({OPTION[dimension]})"
                )
            held = sum(h.reserved(dimension) for h in self.holds.values())
            if wanted > 0 and wanted > left - held:
                return "wait", f"{fmt(dimension, held)} is reserved by running samples"
        self.holds[attempt] = Hold({k: float(v) for k, v in need.items()})
        self.started += 1
        return "start", ""

    def release(self, attempt: str) -> None:
        self.holds.pop(attempt, None)

    def refused(self) -> None:
        self.not_started += 1

    def progress(self) -> str:
        """`$1.20/$2.00` and the like, for progress displays."""
        limits = self.budget.limits()
        shown = [d for d in DIMENSIONS if d in limits] or ["usd"]
        return ", ".join(
            f"{fmt(d, self.spent[d])} of {fmt(d, limits[d])}"
            if d in limits
            else f"{fmt(d, self.spent[d])}"
            for d in shown
        )

    def summary(self) -> SpendSummary:
        return SpendSummary(
            budget=self.budget,
            spent=dict(self.spent),
            earlier=dict(self.earlier or zero()),
            by_model={k: dict(v) for k, v in self.by_model.items()},
            by_family={k: dict(v) for k, v in self.by_family.items()},
            started=self.started,
            not_started=self.not_started,
            exhausted=self.exhausted(),
        )


Spend = dict[str, float]
"""Figures in ledger units, by dimension: `usd`, `tokens`, `gpu_seconds`."""


@dataclass(frozen=True)
class SpendSummary:
    """A spend ledger's figures against the campaign budget (the run's closing note, the
    report's Budget section and the results card read this)."""

    budget: CampaignBudget
    spent: Spend
    """The whole run, every launch."""
    earlier: Spend
    """What launches before this one spent (zeros when this is the first)."""
    by_model: dict[str, Spend]
    by_family: dict[str, Spend]
    started: int
    """Samples this tally let start."""
    not_started: int
    """Samples it refused."""
    exhausted: str | None
    """Why the budget is spent, or None while something is left."""

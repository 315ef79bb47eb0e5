"""Where a process's samples ask for budget and report spend: the run's `Tally`, in this
process (a local run) or in the coordinator actor (a Ray run, one account for every node).

Both write every record to the log folder's ledger before they answer, so spend is on
disk as soon as the call that made it returns.
"""

from __future__ import annotations

from typing import Any, Protocol

from labcoat._run._budget import CampaignBudget, Tally
from labcoat._run._ledger import Ledger


class Bank(Protocol):
    async def admit(self, attempt: str, sample: str, need: dict[str, float]) -> tuple[str, str]: ...
    async def record(self, records: list[dict[str, Any]]) -> tuple[str | None, str]:
        """Count spend; (why the budget is spent or None, progress text)."""
        ...

    async def release(self, attempt: str) -> None: ...
    async def exhausted(self) -> str | None: ...


class Account:
    """A tally with its ledger: the one account of a run (used in one process)."""

    def __init__(self, budget: CampaignBudget, ledger: str, launch: str = "") -> None:
        self.ledger = Ledger(ledger)
        self.tally = Tally(budget, self.ledger.records(), launch)
        # written with the launch's first record: a run that ends before any sample
        # starts leaves no ledger behind (nor a log folder it made)
        self._opening: list[dict[str, Any]] = [{"budget": budget.to_json(), "launch": launch}]

    def _append(self, records: list[dict[str, Any]]) -> None:
        self.ledger.append(self._opening + records)
        self._opening = []

    def admit(self, attempt: str, sample: str, need: dict[str, float]) -> tuple[str, str]:
        verdict, why = self.tally.admit(attempt, need)
        if verdict == "refuse":
            self.tally.refused()
        if verdict != "wait":
            self._append([{"sample": sample, "attempt": attempt, "admit": verdict}])
        return verdict, why

    def record(self, records: list[dict[str, Any]]) -> tuple[str | None, str]:
        self._append(records)  # on disk first: a crash after this loses nothing
        for record in records:
            self.tally.add(record)
        return self.tally.exhausted(), self.tally.progress()

    def release(self, attempt: str) -> None:
        self.tally.release(attempt)

    def exhausted(self) -> str | None:
        return self.tally.exhausted()


class LocalBank:
    """The account in this process (a local run)."""

    def __init__(self, account: Account) -> None:
        self.account = account

    async def admit(self, attempt: str, sample: str, need: dict[str, float]) -> tuple[str, str]:
        return self.account.admit(attempt, sample, need)

    async def record(self, records: list[dict[str, Any]]) -> tuple[str | None, str]:
        return self.account.record(records)

    async def release(self, attempt: str) -> None:
        self.account.release(attempt)

    async def exhausted(self) -> str | None:
        return self.account.exhausted()


class RayBank:
    """The account in the run's coordinator actor (a Ray run): every node asks it."""

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator

    async def admit(self, attempt: str, sample: str, need: dict[str, float]) -> tuple[str, str]:
        verdict, why = await self.coordinator.budget_admit.remote(attempt, sample, need)
        return str(verdict), str(why)

    async def record(self, records: list[dict[str, Any]]) -> tuple[str | None, str]:
        reason, text = await self.coordinator.budget_record.remote(records)
        return reason, str(text)

    async def release(self, attempt: str) -> None:
        await self.coordinator.budget_release.remote(attempt)

    async def exhausted(self) -> str | None:
        return await self.coordinator.budget_exhausted.remote()

"""The run's coordinator: one Ray actor per launch.

It holds the cluster-wide model slots (so N samples on M nodes never hold more than the
limit of connections to one model at once), the live board of which job runs where, and
the run's budget account (`labcoat._run._budget_bank.Account`: one for every node, its
ledger in the log folder, which every node shares; an actor restarted reads it again).
Workers call it; the launcher reads it. It keeps no result: the logs are the record.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from labcoat._run._budget import CampaignBudget
from labcoat._run._budget_bank import Account


@dataclass
class _Model:
    limit: int
    in_use: int = 0
    peak: int = 0
    holders: Counter[str] = field(default_factory=Counter)
    waiting: deque[tuple[str, str, asyncio.Future[None]]] = field(default_factory=deque)
    granted: dict[str, str] = field(default_factory=dict)
    """request id -> holder, for requests granted and not yet released."""


class Coordinator:
    """Model slots and the progress board (run as an async Ray actor)."""

    def __init__(
        self,
        model_limits: dict[str, int],
        budget: CampaignBudget | None = None,
        ledger: str | None = None,
        launch: str = "",
    ) -> None:
        self._models = {name: _Model(limit) for name, limit in model_limits.items()}
        self._board: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._account = Account(budget or CampaignBudget(), ledger, launch) if ledger else None

    # -- model slots ---------------------------------------------------------------
    async def acquire(self, model: str, holder: str, request: str) -> None:
        state = self._models.get(model)
        if state is None:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        state.waiting.append((request, holder, future))
        self._grant(state)
        await future

    def release(self, model: str, request: str) -> None:
        state = self._models.get(model)
        if state is None:
            return
        holder = state.granted.pop(request, None)
        if holder is not None:
            state.in_use -= 1
            state.holders[holder] -= 1
        else:  # still waiting (the caller was cancelled): withdraw the request
            state.waiting = deque(w for w in state.waiting if w[0] != request)
        self._grant(state)

    def release_holder(self, holder: str) -> int:
        """Free every slot a lost node held; the number freed."""
        freed = 0
        for state in self._models.values():
            for request, who in list(state.granted.items()):
                if who == holder:
                    del state.granted[request]
                    state.in_use -= 1
                    freed += 1
            state.holders.pop(holder, None)
            self._grant(state)
        return freed

    def _grant(self, state: _Model) -> None:
        while state.waiting and state.in_use < state.limit:
            request, holder, future = state.waiting.popleft()
            if future.done():
                continue
            state.in_use += 1
            state.peak = max(state.peak, state.in_use)
            state.holders[holder] += 1
            state.granted[request] = holder
            future.set_result(None)

    def slots(self) -> dict[str, dict[str, int]]:
        return {
            name: {
                "limit": s.limit,
                "in_use": s.in_use,
                "peak": s.peak,
                "waiting": len(s.waiting),
            }
            for name, s in self._models.items()
        }

    # -- progress board --------------------------------------------------------------
    def started(self, key: tuple[str, str, int], node_id: str, host: str) -> None:
        entry = self._board.setdefault(tuple(key), {"attempts": 0})  # type: ignore[arg-type]
        entry.update(node_id=node_id, host=host, since=time.time())
        entry["attempts"] += 1

    def board(self) -> dict[tuple[str, str, int], dict[str, Any]]:
        return dict(self._board)

    # -- the run's budget ----------------------------------------------------------------
    def budget_admit(self, attempt: str, sample: str, need: dict[str, float]) -> tuple[str, str]:
        if self._account is None:
            return "start", ""
        return self._account.admit(attempt, sample, need)

    def budget_record(self, records: list[dict[str, Any]]) -> tuple[str | None, str]:
        if self._account is None:
            return None, ""
        return self._account.record(records)

    def budget_release(self, attempt: str) -> None:
        if self._account is not None:
            self._account.release(attempt)

    def budget_exhausted(self) -> str | None:
        return self._account.exhausted() if self._account is not None else None

    def budget_progress(self) -> tuple[str | None, str]:
        """(why the budget is spent or None, progress text) for the launcher's display."""
        if self._account is None:
            return None, ""
        return self._account.exhausted(), self._account.tally.progress()

"""What a sample knows of its task, and the family's operations run for that sample."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.util import store

from labcoat.families.rebench._family import (
    DriverRun,
    TaskFamilyDir,
    family_secrets,
    run_operation,
)
from labcoat.families.rebench._protected import restore_protected
from labcoat.families.rebench._state import SampleState
from labcoat.grading import exclusive_machine, within_scoring_time

STATE_KEY = "labcoat:rebench:state"
FLAGS_KEY = "labcoat:rebench:integrity_flags"


@dataclass(frozen=True)
class SampleTask:
    """What a sample's metadata says about its task (set when the dataset is built)."""

    family: TaskFamilyDir
    task: str
    intermediate_scoring: bool
    has_aggregate: bool
    has_score: bool
    score_spec: dict[str, Any] | None
    timing_sensitive: bool
    memory_mb: int
    cpus: float | None
    gpus: int
    network: bool
    visible_to_agent: bool
    timeout: float
    secrets: tuple[str, ...]
    secrets_files: tuple[Path, ...]
    unavailable: str | None

    @classmethod
    def of(cls, metadata: dict[str, Any]) -> SampleTask:
        m = metadata["rebench"]
        return cls(
            family=TaskFamilyDir(Path(m["family_dir"])),
            task=m["task"],
            intermediate_scoring=m["intermediate_scoring"],
            has_aggregate=m["has_aggregate"],
            has_score=m.get("has_score", True),
            score_spec=m["score"],
            timing_sensitive=m["timing_sensitive"],
            memory_mb=m["memory_mb"],
            cpus=m.get("cpus"),
            gpus=int(m.get("gpus") or 0),
            network=bool(m.get("network")),
            visible_to_agent=bool(m.get("visible_to_agent")),
            timeout=float(m.get("timeout") or 3600),
            secrets=tuple(m.get("secrets") or ()),
            secrets_files=tuple(Path(f) for f in m.get("secrets_files") or ()),
            unavailable=m.get("unavailable"),
        )

    def secret_values(self) -> dict[str, str]:
        # a file removed since the task was built adds nothing: what it held is missing
        files = tuple(f for f in self.secrets_files if f.is_file())
        return family_secrets(self.family, list(self.secrets), files)


def sample_state() -> SampleState | None:
    path = store().get(STATE_KEY)
    return SampleState(Path(path)) if path else None


def flag(text: str) -> None:
    """Record an integrity flag: the run's scoring was broken (see docs/integrity.md)."""
    flags: list[str] = store().get(FLAGS_KEY, [])
    if text not in flags:
        store().set(FLAGS_KEY, [*flags, text])


def flags() -> list[str]:
    return list(store().get(FLAGS_KEY, []))


async def sample_operation(
    sample: SampleTask,
    operation: str,
    *,
    home: Path | None,
    submission: str = "",
    score_log: list[dict[str, Any]] | None = None,
    timed: bool = False,
) -> DriverRun:
    """Run an operation of the sample's task with the sample's own state bound in: the
    agent's home writable (as in METR's single container), /root, /protected and the
    sample's uuid, the family's secrets, the task's resources and network."""
    state = sample_state()
    if operation in ("intermediate_score", "score") and home is not None and state is not None:
        changed = restore_protected(home, state)
        if changed:
            flag(
                "protected file(s) the agent replaced or removed, put back before scoring: "
                + ", ".join(changed)
            )
    hold = exclusive_machine() if timed and sample.timing_sensitive else contextlib.nullcontext()
    async with hold:
        return await run_operation(
            sample.family,
            operation,
            sample.task,
            home=home,
            home_writable=home is not None,
            state_binds=state.binds() if state is not None else (),
            submission=submission,
            score_log=score_log,
            memory_mb=sample.memory_mb,
            cpus=sample.cpus,
            gpus=sample.gpus,
            network=sample.network,
            secrets=sample.secret_values(),
            timeout=within_scoring_time(sample.timeout),
        )

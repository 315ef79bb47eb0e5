"""The least privilege labcoat's sandbox needs inside a Docker container, measured.

For each isolation mode (root in the container; `lab`, an ordinary user with a
subordinate range: separate users; `lab-one`, without: one user) a container of
labcoat's node image is started with each security option alone, with all of them, and,
removing the most powerful first, with every smaller set that still works: the least
privilege is what the measurement leaves, never a guess. In each container
`containers/probe.py` starts a real sample sandbox (`BwrapSession`) and runs a command
as the agent (and its root). The measured table is written to
test-artifacts/containers/least_privilege.md and must equal docs/containers.md's, so
the docs cannot drift from what an engine does.

Needs a Docker engine and the image (`containers/engine.sh start`,
`containers/build-offline.sh`); skips with that reason where there is none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from docker_engine import (
    EXPECTED_MODE,
    IMAGE,
    MODES,
    OPTIONS,
    PRIVILEGED,
    REPO,
    docker,
    documented,
    unavailable,
)

WHY_NOT = unavailable()
# minutes to an hour on 2 cores: `./test -m slow tests/containers` (deselected otherwise)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))]

ARTIFACT = REPO / "test-artifacts" / "containers" / "least_privilege.md"


@dataclass(frozen=True)
class Result:
    ok: bool
    hard_disk: bool
    """A quota the kernel enforces (an ext4 image), not one that is watched."""
    cell: str


def run_probe(user: str, options: frozenset[str]) -> Result:
    args = [a for name in OPTIONS if name in options for a in OPTIONS[name]]
    if PRIVILEGED in options:
        args.append(PRIVILEGED)
    probe = REPO / "containers" / "probe.py"
    done = docker(
        "run", "--rm", "--network", "none", "--user", user, *args,
        "-v", f"{probe}:/probe.py:ro", IMAGE, "python", "/probe.py",
        timeout=300,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        said = done.stderr.strip().splitlines() or ["no output"]
        # the engine's refusal ("Error response from daemon: ..."), not the usage hint after it
        tail = next((line for line in said if "Error response" in line), said[-1])
        return Result(False, False, f"not started: {_normalized(tail)}")
    found = json.loads(lines[-1])
    if found["ok"] and found["mode"] != EXPECTED_MODE[user]:
        # lab without a usable range falls back to one user: not the mode measured here
        why = _normalized(str(found.get("mapping")))
        return Result(False, False, f"only {found['mode']} ({why})")
    if found["ok"]:
        disk = str(found["disk"]).split(" (")[0]
        cell = f"starts (limits: {found['limits']}; disk: {disk})"
        return Result(True, disk in {"loop", "fuse"}, cell)
    return Result(False, False, _normalized(str(found.get("refused") or found.get("error"))))


def _normalized(message: str) -> str:
    """A refusal as the table shows it: no sample folders, ids or pids in it."""
    message = re.sub(r"/[\w./-]*[0-9a-f]{8,}[\w./-]*", "…", message)
    message = re.sub(r"\b\d{3,}\b", "N", message)
    return message.replace("|", "\\|")[:160]


class Measurement:
    """Every option set tried for one user, each at most once."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.results: dict[frozenset[str], Result] = {}

    def __call__(self, options: frozenset[str]) -> Result:
        if options not in self.results:
            self.results[options] = run_probe(self.user, options)
        return self.results[options]

    def least(self, enough: Callable[[Result], bool]) -> frozenset[str] | None:
        """Drop options from all of them, most powerful first, while `enough` holds."""
        chosen = frozenset(OPTIONS)
        if not enough(self(chosen)):
            return None
        for name in OPTIONS:
            fewer = chosen - {name}
            if enough(self(fewer)):
                chosen = fewer
        return chosen


def spelled(options: frozenset[str] | None) -> str:
    if options is None:
        return "none works without `--privileged`"
    if not options:
        return "Docker's defaults"
    return " + ".join(f"`{name}`" for name in OPTIONS if name in options)


def measure_mode(user: str) -> tuple[Measurement, frozenset[str] | None, frozenset[str] | None]:
    measured = Measurement(user)
    sets = [frozenset(), *(frozenset({name}) for name in OPTIONS), frozenset({PRIVILEGED})]
    for options in sets:
        measured(options)
    starts = measured.least(lambda r: r.ok)
    hard_disk = measured.least(lambda r: r.ok and r.hard_disk)
    return measured, starts, hard_disk


def table(
    measured: dict[str, tuple[Measurement, frozenset[str] | None, frozenset[str] | None]],
) -> str:
    rows = [frozenset(), *(frozenset({name}) for name in OPTIONS)]
    for _, starts, hard in measured.values():
        rows += [s for s in (starts, hard) if s and len(s) > 1]
    rows.append(frozenset({PRIVILEGED}))
    ordered = list(dict.fromkeys(rows))
    head = "| container started with | " + " | ".join(
        f"{mode} (`{user}`)" for mode, user in MODES.items()
    )
    lines = [head + " |", "|---" * (len(MODES) + 1) + "|"]
    for options in ordered:
        name = (
            "defaults"
            if not options
            else " + ".join(f"`{n}`" for n in [*OPTIONS, PRIVILEGED] if n in options)
        )
        cells = [measured[mode][0](options).cell for mode in MODES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| mode | least privilege: the sandbox starts | with a hard disk quota |",
        "|---|---|---|",
    ]
    for mode, (_, starts, hard) in measured.items():
        lines.append(f"| {mode} | {spelled(starts)} | {spelled(hard)} |")
    return "\n".join(lines) + "\n"


def test_least_privilege_per_mode_is_measured_and_documented() -> None:
    with ThreadPoolExecutor(max_workers=len(MODES)) as pool:
        futures = {mode: pool.submit(measure_mode, user) for mode, user in MODES.items()}
        measured = {mode: future.result() for mode, future in futures.items()}
    text = table(measured)
    # written before any check: a measurement that fails is still the record of what failed
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(text)
    print(text)
    for mode, (_, starts, _) in measured.items():
        # --privileged is only a reference: a host whose own capability set is short of
        # runc's full set refuses it ("unable to apply caps"), and the table says so
        assert starts is not None, f"{mode}: no set of options short of --privileged starts it"
        # what the search chose starts again in a fresh container (not a fluke)
        assert run_probe(MODES[mode], starts).ok, f"{mode}: {spelled(starts)} started once only"
    assert documented() == text, (
        f"docs/containers.md's measured table differs from this measurement (written to "
        f"{ARTIFACT.relative_to(REPO)}): put the new one between its markers"
    )

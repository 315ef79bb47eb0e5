"""Two samples running at once cannot pass each other a token through what they share:
the task's read-only environment (and the system tree, /etc, the exec server, /dev
nodes), the kernel's list of locks, or file notifications.

Each test runs two real sandboxes of one environment, a sender and a receiver, and sends
a random 16-bit token (channel_probe.py, run inside them, says how); the receiver must
get none of it. Before labcoat gave each sample its own overlay of the shared trees and
refused notifications, every one of these carried the whole token.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest

from labcoat.sandbox import PythonEnv
from labcoat.sandbox._paths import DEFAULT_WORKDIR, SANDBOX_ENV, SANDBOX_SERVER

pytestmark = pytest.mark.anyio

PROBE = (Path(__file__).parent / "channel_probe.py").read_text()
READY_TIMEOUT_S = 60


def token(bits: int = 16) -> int:
    """Random, with at least one 1 and one 0 among its bits."""
    return (secrets.randbits(bits) | 1) & ~2


async def pair(make_session: Any) -> tuple[Any, Any]:
    env = PythonEnv()
    return await make_session(environment=env), await make_session(environment=env)


def _answer(result: Any) -> dict[str, Any]:
    assert result.success, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


async def exchange(
    waiter: Any,
    waiter_args: list[str],
    actor: Any,
    actor_args: list[str],
    user: str | None = None,
    actor_prefix: tuple[str, ...] = (),
) -> tuple[Any, Any]:
    """Start the waiter (it says `ready`), run the actor (after `actor_prefix`), then tell
    the waiter to stop; both results."""
    results: dict[str, Any] = {}

    async def wait() -> None:
        results["waiter"] = await waiter.exec(["python3", "-c", PROBE, *waiter_args], user=user)

    ready = waiter.host_path(f"{DEFAULT_WORKDIR}/ready")
    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        with anyio.fail_after(READY_TIMEOUT_S):
            while not ready.exists():
                assert "waiter" not in results, results["waiter"].stderr
                await anyio.sleep(0.05)
        results["actor"] = await actor.exec(
            [*actor_prefix, "python3", "-c", PROBE, *actor_args], user=user
        )
        await anyio.sleep(0.3)  # notifications of the actor's opens arrive
        waiter.host_path(f"{DEFAULT_WORKDIR}/stop").write_text("1")
    return results["waiter"], results["actor"]


async def held_then_probed(make_session: Any, kind: str, user: str | None = None) -> int:
    """A holder in one sample, a prober in the other: the token the prober read."""
    sender, receiver = await pair(make_session)
    sent = token()
    _, probed = await exchange(
        sender,
        [f"{kind}-hold", SANDBOX_ENV, str(sent)],
        receiver,
        [f"{kind}-probe", SANDBOX_ENV, "0"],
        user=user,
    )
    received = _answer(probed)["bits"]
    assert received in (0, sent), f"noise: sent {sent:#x}, received {received:#x}"
    return received


async def test_flock_on_the_environment_carries_nothing(make_session) -> None:
    assert await held_then_probed(make_session, "flock") == 0


async def test_posix_range_locks_carry_nothing(make_session) -> None:
    assert await held_then_probed(make_session, "posix") == 0


async def test_open_file_description_locks_carry_nothing(make_session) -> None:
    assert await held_then_probed(make_session, "ofd") == 0


async def test_leases_carry_nothing(make_session, sandbox_mode: str) -> None:
    """A write lease is refused while another process has the file open; only the file's
    owner may ask (root's files as root, the caller's as the agent)."""
    owner = "root" if sandbox_mode == "root" else "agent"
    assert await held_then_probed(make_session, "lease", user=owner) == 0


async def test_proc_locks_lists_no_other_sample_s_locks(make_session) -> None:
    """An open-file-description lock has no pid, so a pid namespace does not hide it from
    /proc/locks, which lists every lock of the machine with its byte range."""
    sender, receiver = await pair(make_session)
    sent = secrets.randbits(60) | 1
    _, probed = await exchange(
        sender,
        ["proc-locks-hold", SANDBOX_ENV, str(sent)],
        receiver,
        ["proc-locks-probe", SANDBOX_ENV, str(sent)],
    )
    assert _answer(probed)["bits"] == 0


async def test_agent_code_a_grader_runs_sees_no_other_sample_s_locks(
    make_session, sandbox_mode: str
) -> None:
    """A grader's sandbox (one-user: it nests the agent's code, whose sandbox mounts a
    /proc of its own, which the kernel allows only over a whole one) hides the machine's
    locks from the agent's code it runs as well."""
    if sandbox_mode == "one-user" and os.geteuid() == 0:
        # root's bwrap makes the grader's mounts before its user namespace, which locks
        # them, and a locked /proc/irq forbids the nest's /proc; ordinary users (whose
        # mode this is: CI runs this file as labcoat-one) make them inside it
        pytest.skip("the nested sandbox of one-user mode runs as an ordinary user only")
    env = PythonEnv()
    sender = await make_session(environment=env)
    grader = await make_session(environment=env, agent_jail=True)
    sent = secrets.randbits(60) | 1
    nest = 'if [ -n "${LABCOAT_AS_AGENT:-}" ]; then exec $LABCOAT_AS_AGENT -- "$@"; fi; exec "$@"'
    as_agent = ("bash", "-c", nest, "as-agent")
    _, probed = await exchange(
        sender,
        ["proc-locks-hold", SANDBOX_ENV, str(sent)],
        grader,
        ["proc-locks-probe", SANDBOX_ENV, str(sent)],
        actor_prefix=as_agent,
    )
    assert _answer(probed)["bits"] == 0


@pytest.mark.parametrize("kind", ["inotify", "fanotify", "dnotify"])
async def test_notifications_of_opens_carry_nothing(make_session, kind: str) -> None:
    sender, receiver = await pair(make_session)
    sent = token()
    watched, touched = await exchange(
        receiver,
        [f"{kind}-watch", SANDBOX_ENV, "0"],
        sender,
        [f"{kind}-touch", SANDBOX_ENV, str(sent)],
    )
    assert touched.success, touched.stderr
    answer = _answer(watched)
    assert answer["bits"] == 0, f"sent {sent:#x}, received {answer['bits']:#x}"
    assert answer["refused"], "the watch calls were not refused"


async def test_locks_on_every_other_shared_file_carry_nothing(make_session) -> None:
    """The system tree, the interpreter's library, /etc's host files, the exec server and
    /dev's nodes: a lock in one sample is seen in no other (rootless, /dev's nodes are the
    host's: a user namespace cannot make device nodes; docs/sandbox.md says so)."""
    sender, receiver = await pair(make_session)
    where = await sender.exec(["python3", "-c", "import os; print(os.__file__)"])
    paths = [
        f"{SANDBOX_ENV}/pyvenv.cfg",
        where.stdout.strip(),
        "/usr/bin/env",
        "/etc/ld.so.cache",
        SANDBOX_SERVER,
        "/dev/null",
        "/dev/zero",
        "/dev/urandom",
    ]
    everything = (1 << len(paths)) - 1
    _, probed = await exchange(
        sender,
        ["flock-hold", ":".join(paths), str(everything)],
        receiver,
        ["flock-probe", ":".join(paths), "0"],
    )
    bits = _answer(probed)["bits"]
    seen = [path for bit, path in enumerate(paths) if bits >> bit & 1]
    # labcoat run as root makes each sample's nodes; a user namespace cannot make any
    allowed = [p for p in paths if p.startswith("/dev/")] if os.geteuid() != 0 else []
    assert set(seen) <= set(allowed), f"locks seen across samples on {seen}"

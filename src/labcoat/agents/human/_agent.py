"""`--agent human`: a person works the sample in its own sandbox, through a shell the
harness opens there (`labcoat attach`), with the same limits, network, GPUs, time budget,
score tool and protected grader an agent gets; their commands land in the log."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.log._samples import sample_active
from inspect_ai.model import ChatMessageUser, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef

from labcoat._errors import LabcoatError
from labcoat.agents.human._clock import WorkingClock
from labcoat.agents.human._control import HumanControl, ScoreCall
from labcoat.agents.human._record import MODEL, SUMMARY_KEY, SessionRecord
from labcoat.agents.human._sessions import (
    RUN_TOKEN_ENV,
    LiveSession,
    local_log_dir,
    register,
    unregister,
)
from labcoat.integrity import INTEGRITY_FLAGS, flags_of
from labcoat.sandbox import BwrapSession, current_bwrap_session

SANDBOX_DIR = "/tmp/.labcoat-human"
"""The session's files inside the sandbox (host-backed: the sockets are reachable there)."""
SOCKET_PATH_MAX = 107  # sun_path's size on Linux, less the terminating NUL
READY_SECONDS = 60
CLOSE_SECONDS = 5
UNBOUNDED_SECONDS = 7 * 24 * 3600  # no budget: the terminal server waits for `task submit`


def _instructions(state: TaskState) -> str:
    texts = [m.text for m in state.messages if isinstance(m, ChatMessageUser)]
    return "\n\n".join(t for t in texts if t).strip() or state.input_text


def _budget_seconds(metadata: dict[str, Any]) -> float | None:
    minutes = metadata.get("time_limit_minutes")
    return 60.0 * float(minutes) if isinstance(minutes, int | float) and minutes > 0 else None


def _score_call(tools: list[Tool]) -> ScoreCall | None:
    """The family's `score` tool, called as the agent's would be."""
    for tool in tools:
        if ToolDef(tool).name == "score":

            async def call(tool: Tool = tool) -> str:
                result = await tool()
                return result if isinstance(result, str) else str(result)

            return call
    return None


def _welcome(state: TaskState, budget: float | None, has_score: bool, session_id: str) -> str:
    limit = f"{budget / 3600:.2f} h of working time" if budget else "no time budget"
    commands = ["task instructions", "task status", "task stop / task start (pause, resume)"]
    if has_score:
        commands.append("task score")
    commands += ["task note TEXT", "task submit [ANSWER]"]
    return (
        f"\n== labcoat: you are working on {state.sample_id} (epoch {state.epoch}) ==\n"
        f"You have {limit}; the clock started when you first attached.\n"
        f"Commands: {'; '.join(commands)}.\n"
        f"Everything you type and see here is recorded in the run's log.\n"
        f"Detach with Ctrl-] (the session goes on; `labcoat attach {session_id}` returns "
        "to it).\n"
        f"The instructions are in {SANDBOX_DIR}/instructions.txt:\n\n"
    )


def _install(host: Path, owner: tuple[int, int], instructions: str, welcome: str) -> None:
    """The session's files in the sandbox's /tmp: the terminal server, `task`, the rc."""
    files = resources.files("labcoat.agents.human") / "_in_sandbox"
    (host / "bin").mkdir(parents=True, exist_ok=True)
    server = files.joinpath("shell_server.py").read_text()
    task = "#!/usr/bin/env python3\n" + files.joinpath("task.py").read_text()
    rc = files.joinpath("bashrc").read_text()
    rc = rc.replace("__BIN__", f"{SANDBOX_DIR}/bin").replace("__DIR__", SANDBOX_DIR)
    (host / "shell_server.py").write_text(server)
    (host / "bin" / "task").write_text(task)
    (host / "bin" / "task").chmod(0o755)
    (host / "bashrc").write_text(rc)
    (host / "instructions.txt").write_text(instructions + "\n")
    (host / "welcome.txt").write_text(welcome + instructions + "\n\n")
    if os.geteuid() == 0:
        for path in [host, host / "bin", *host.rglob("*")]:
            os.lchown(path, *owner)


def _host_dir(session: BwrapSession) -> Path:
    host = session.host_path(SANDBOX_DIR)
    if host is None:  # /tmp is always bound; a change there must not go unnoticed
        raise LabcoatError(f"--agent human: {SANDBOX_DIR} is not host-backed in this sandbox")
    for name in ("control.sock", "term.sock"):
        if len(os.fsencode(host / name)) > SOCKET_PATH_MAX:
            raise LabcoatError(
                f"--agent human: the sandbox folder {host} is too deep for a Unix socket "
                f"(over {SOCKET_PATH_MAX} bytes); set LABCOAT_SANDBOXES (or TMPDIR) shorter"
            )
    return host


@solver
def human_agent(family_tools: Callable[[dict[str, Any]], list[Tool]] | None = None) -> Solver:
    """A person takes the sample (docs/humans.md); `family_tools` gives the family's
    tools for a sample's metadata (its `score` tool becomes `task score`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        session = current_bwrap_session()
        if session is None:
            raise LabcoatError("--agent human needs the bwrap sandbox (--sandbox bwrap)")
        host = _host_dir(session)
        agent = session.user("agent")
        budget = _budget_seconds(state.metadata)
        score = _score_call(family_tools(state.metadata) if family_tools else [])
        instructions = _instructions(state)
        session_id = uuid.uuid4().hex[:12]
        welcome = _welcome(state, budget, bool(score), session_id)
        _install(host, (agent.uid, agent.gid), instructions, welcome)
        record = SessionRecord(state)
        clock = WorkingClock(budget)
        control = HumanControl(record, clock, instructions, score, freeze=session.paused)
        live: Path | None = None
        try:
            async with (
                await anyio.create_unix_listener(host / "control.sock") as listener,
                anyio.create_task_group() as group,
            ):
                os.chmod(host / "control.sock", 0o666)  # the sandbox's user connects
                group.start_soon(listener.serve, control.serve)
                group.start_soon(_terminal_server, session, control, budget)
                try:
                    live = await _open(state, control, host, session_id)
                    await _until_done(control)
                finally:  # however it ends, the person hears why before the terminal goes
                    with anyio.CancelScope(shield=True):
                        await _close_session(control)
                group.cancel_scope.cancel()
        finally:
            await control.thaw()  # nothing stays frozen for the grader
            if live is not None:
                unregister(live)
            if control.ended_by is None:
                control.end("interrupted")
            control.commands.finish()
            summary = {"ended_by": control.ended_by, "attaches": control.attaches}
            record.finish({**summary, **clock.record()})
            flags = control.integrity_flags()
            summary_now = state.store.get(SUMMARY_KEY) or {}
            state.store.set(SUMMARY_KEY, {**summary_now, INTEGRITY_FLAGS: flags})
            if flags:  # the run's own flags: every table reads them (labcoat.integrity)
                state.metadata[INTEGRITY_FLAGS] = [*flags_of(state.metadata), *flags]
        if control.answer is not None:
            state.output = ModelOutput.from_content(MODEL, control.answer)
        return state

    return solve


async def _open(state: TaskState, control: HumanControl, host: Path, session_id: str) -> Path:
    """Wait for the terminal server, then say where the person attaches: a command that
    names this session (never "the one waiting": other evals may have theirs)."""
    with anyio.fail_after(READY_SECONDS):
        await control.ready.wait()
    if control.start_error is not None:
        raise LabcoatError(
            f"--agent human: the terminal server did not start: {control.start_error}"
        )
    active = sample_active()
    live = register(
        LiveSession(
            id=session_id,
            task=str(state.metadata.get("task_id") or state.sample_id),
            sample=str(state.sample_id),
            epoch=state.epoch,
            terminal=str(host / "term.sock"),
            pid=os.getpid(),
            run=os.environ.get(RUN_TOKEN_ENV, ""),
            started=time.time(),
            log_dir=local_log_dir(active.log_location) if active else "",
            run_id=(active.run_id or "") if active else "",
            eval_id=active.eval_id if active else "",
        )
    )
    control.record.event("waiting", attach=f"labcoat attach {session_id}")
    print(
        f"labcoat: {state.sample_id} is ready for a person: labcoat attach {session_id}",
        file=sys.stderr,
        flush=True,
    )
    return live


async def _close_session(control: HumanControl) -> None:
    """Tell the person, close their terminal, and see the terminal server end (at most
    `CLOSE_SECONDS`, then it is stopped)."""
    if control.ended_by is None:
        control.end("interrupted")
    await control.thaw()
    why = "the run was interrupted" if control.ended_by == "interrupted" else control.ended_by
    await control.tell_terminal(f"the session is over ({why}).", farewell=True)
    await control.close_terminal()
    with anyio.move_on_after(CLOSE_SECONDS):
        await control.server_gone.wait()
    if control.server_scope is not None:
        control.server_scope.cancel()


async def _until_done(control: HumanControl) -> None:
    while not control.done.is_set():
        with anyio.move_on_after(1):
            await control.done.wait()
        if control.clock.over_budget() and not control.done.is_set():
            control.end("time budget used")


async def _terminal_server(
    session: BwrapSession, control: HumanControl, budget: float | None
) -> None:
    """Run the terminal server for the session; its early end ends the session."""
    command = [
        "python3",
        f"{SANDBOX_DIR}/shell_server.py",
        f"{SANDBOX_DIR}/term.sock",
        f"{SANDBOX_DIR}/control.sock",
        "bash",
        "--rcfile",
        f"{SANDBOX_DIR}/bashrc",
        "-i",
    ]
    timeout = int(budget * 4 + 3600) if budget else UNBOUNDED_SECONDS
    # shielded: an interrupted run first says goodbye in the person's terminal
    # (`_close_session`), then cancels this scope itself
    with anyio.CancelScope(shield=True) as control.server_scope:
        try:
            result = await session.exec(command, timeout=timeout, serves_sample=True)
        except TimeoutError:
            control.end("the terminal server ran past its time")
            return
        finally:
            control.server_gone.set()
    if control.server_scope.cancelled_caught:
        return
    if not control.done.is_set():
        why = (result.stderr or result.stdout).strip()[-2000:]
        control.record.event("terminal server ended", returncode=result.returncode, output=why)
        if not control.ready.is_set():
            control.start_error = why or f"exit {result.returncode}"
            control.ready.set()
        control.end(f"the terminal server ended (exit {result.returncode})")

"""Running a task's grader after the agent stops, in a fresh protected sandbox.

The task folder (grader, held-out data, reference solution, sidecar) is copied in as
/root, root-only; the agent's workspace is bound read-only at /root/workspace, so agent
code that a grader runs as the agent user can reach neither. Two ways to run:

- recomputing graders (labcoat's): run in /root with $LABCOAT_WORKSPACE pointing at the
  workspace, and write their JSON result to $LABCOAT_GRADE_OUTPUT;
- upstream graders, which parse logs the agent's runs wrote under the task folder: run in
  a scratch copy of the workspace where grading/ and task_description.md are put back from
  the protected copy (an agent's edits to either count for nothing), and the files the
  grader is declared to write are removed first (a summary the agent planted is not read
  when the grader writes none). Their scores are self-reported.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.util import OutputLimitExceededError

from labcoat.families.researchgym._folder import DESCRIPTION, TaskFolder
from labcoat.grading import grader_session

WORKSPACE_MOUNT = "/root/workspace"
GRADE_OUTPUT = "/root/.labcoat/grade.json"
SCRATCH_RUN = "/root/.labcoat/run"
OUTPUT_TAIL = 6000


@dataclass
class GraderRun:
    command: str
    run_dir: str
    exit_code: int | None
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    isolation: str
    """The sandbox's mode (`labcoat.sandbox.Isolation`): with one user, ownership cannot
    keep agent code that the grader runs out of /root."""
    files: dict[str, str | None] = field(default_factory=dict)
    """Text of the files asked for (paths relative to run_dir, or absolute), None if absent."""

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "run_dir": self.run_dir,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "seconds": round(self.seconds, 2),
            "stdout_tail": self.stdout[-OUTPUT_TAIL:],
            "stderr_tail": self.stderr[-OUTPUT_TAIL:],
            "isolation": self.isolation,
        }


def _script(command: str, self_reported: bool, outputs: list[str]) -> tuple[str, str]:
    """(bash script, folder it runs in)."""
    output_dir = shlex.quote(str(Path(GRADE_OUTPUT).parent))
    prepare = f"rm -rf {output_dir} && mkdir -p {output_dir}"
    if not self_reported:
        return f"{prepare}\ncd /root\n{command}\n", "/root"
    run = shlex.quote(SCRATCH_RUN)
    planted = " ".join(shlex.quote(f"{SCRATCH_RUN}/{name}") for name in outputs)
    return (
        f"{prepare}\nrm -rf {run} && mkdir -p {run}\n"
        f"cp -a {WORKSPACE_MOUNT}/. {run}/\n"
        f"rm -rf {run}/grading {run}/{DESCRIPTION}{' ' + planted if planted else ''}\n"
        f"cp -a /root/grading {run}/grading\n"
        f"cp -a /root/{DESCRIPTION} {run}/{DESCRIPTION}\n"
        f"cd {run}\n{command}\n",
        SCRATCH_RUN,
    )


async def run_grader(
    folder: TaskFolder,
    workspace: Path,
    *,
    command: str,
    self_reported: bool,
    timeout_s: float,
    memory_mb: int,
    read_files: list[str],
    gpus: int = 0,
    network: bool = False,
) -> GraderRun:
    """Run the grader; `read_files` (relative to where it ran, or absolute) are read back,
    and for upstream graders the relative ones are removed from the scratch copy first."""
    outputs = [name for name in read_files if not name.startswith("/") and name != DESCRIPTION]
    script, run_dir = _script(command, self_reported, outputs)
    env = {
        "LABCOAT_WORKSPACE": WORKSPACE_MOUNT,
        "LABCOAT_GRADE_OUTPUT": GRADE_OUTPUT,
        "LABCOAT_GRADER_SANDBOX": "1",
        "HOME": "/root",
    }
    async with grader_session(
        protected=folder.path,
        workspace=workspace,
        workspace_target=WORKSPACE_MOUNT,
        workspace_writable=False,
        environment=folder.environment,
        memory_mb=memory_mb,
        gpus=gpus,
        network=network,
        blocklist=folder.blocklist.to_json() if network else None,
    ) as session:
        privileged = "root" in session.users
        started = time.monotonic()
        try:
            result = await session.exec(
                ["bash", "-c", script],
                cwd="/root",
                env=env,
                user="root" if privileged else None,
                timeout=timeout_s,
            )
            exit_code, stdout, stderr, timed_out = (
                result.returncode,
                result.stdout,
                result.stderr,
                False,
            )
        except TimeoutError as ex:
            exit_code, stdout, stderr, timed_out = None, "", str(ex), True
        seconds = time.monotonic() - started
        files: dict[str, str | None] = {}
        for name in read_files:
            path = name if name.startswith("/") else f"{run_dir}/{name}"
            try:
                files[name] = str(await session.read_file(path))
            except (OSError, UnicodeDecodeError, RuntimeError, OutputLimitExceededError):
                files[name] = None  # absent, unreadable or too large: no value from it
    return GraderRun(
        command,
        run_dir,
        exit_code,
        timed_out,
        seconds,
        stdout,
        stderr,
        str(session.isolation),
        files,
    )

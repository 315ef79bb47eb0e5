"""bash and python, run in the sample's sandbox as the agent."""

from __future__ import annotations

from inspect_ai.tool import Tool, ToolError, tool
from inspect_ai.util import OutputLimitExceededError, sandbox

from labcoat.agents.research._tools._limits import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_CALL_TIMEOUT,
    clamp_timeout,
)
from labcoat.agents.research._tools._output import format_exec, truncate_middle


async def _run(cmd: list[str], timeout: int, stdin: str | None = None) -> str:
    try:
        result = await sandbox().exec(cmd, input=stdin, timeout=timeout)
    except TimeoutError:
        raise ToolError(
            f"the command ran longer than {timeout} s and was killed with its child "
            "processes; use start_job for long runs"
        ) from None
    except OutputLimitExceededError as ex:  # sandboxes that refuse long output (not bwrap)
        return truncate_middle(
            f"[the output passed the sandbox's {ex.limit_str} limit; the exit code is "
            f"unknown; what the sandbox kept:]\n{ex.truncated_output or ''}"
        )
    return format_exec(result.returncode, result.stdout, result.stderr)


@tool(parallel=False)
def bash(max_timeout: int = DEFAULT_MAX_CALL_TIMEOUT) -> Tool:
    async def execute(cmd: str, timeout: int | None = None) -> str:
        """Run a bash command in your sandbox and return its output and exit code.

        Each call is a fresh shell in the working directory. Long output keeps its
        beginning and end. For work longer than the timeout, use start_job.

        Args:
            cmd: The bash command to run.
            timeout: Seconds before the command and its children are killed
                (default 180; capped by the task).
        """
        return await _run(
            ["bash", "-c", cmd], clamp_timeout(timeout, DEFAULT_CALL_TIMEOUT, max_timeout)
        )

    return execute


@tool(parallel=False)
def python(max_timeout: int = DEFAULT_MAX_CALL_TIMEOUT) -> Tool:
    async def execute(code: str, timeout: int | None = None) -> str:
        """Run Python code (a fresh interpreter) in your sandbox; print what you need to see.

        Args:
            code: The Python program to run.
            timeout: Seconds before it is killed (default 180; capped by the task).
        """
        return await _run(
            ["python3", "-"], clamp_timeout(timeout, DEFAULT_CALL_TIMEOUT, max_timeout), stdin=code
        )

    return execute

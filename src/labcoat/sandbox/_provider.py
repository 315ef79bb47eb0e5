"""The `bwrap` sandbox provider for Inspect: `sandbox="bwrap"` in a task or `--sandbox bwrap`."""

from __future__ import annotations

import os
from typing import Any, Literal, overload

from inspect_ai.util import (
    ExecResult,
    SandboxConnection,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    sandboxenv,
)
from pydantic import BaseModel
from typing_extensions import override

from labcoat._errors import MissingDependencyError
from labcoat.sandbox._command import bwrap_path
from labcoat.sandbox._config import BwrapConfig
from labcoat.sandbox._layout import isolation
from labcoat.sandbox._record import record_gpus, record_sandbox_events
from labcoat.sandbox._sample import BwrapSession


def _config_of(config: SandboxEnvironmentConfigType | None) -> BwrapConfig:
    if config is None:
        return BwrapConfig()
    if isinstance(config, BwrapConfig):
        return config
    if isinstance(config, str):
        raise ValueError(f"the bwrap sandbox takes a BwrapConfig, not a file name ({config!r})")
    return BwrapConfig.model_validate(config.model_dump())


@sandboxenv(name="bwrap")
class BwrapSandboxEnvironment(SandboxEnvironment):
    """A bubblewrap sandbox: no daemon, unprivileged, per-sample workspace and limits."""

    def __init__(self, session: BwrapSession) -> None:
        super().__init__()
        self.session = session

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        try:
            bwrap_path()
        except MissingDependencyError as ex:
            # Inspect shows this message as the task's error
            raise RuntimeError(str(ex)) from None

    @override
    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        session = await BwrapSession.create(_config_of(config))
        record_sandbox_events(session)  # what it holds (GPUs) from the start
        return {"default": cls(session)}

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            session = environment.as_type(BwrapSandboxEnvironment).session
            record_gpus(session)  # what it held, to the end (the log is written after)
            await session.close()

    @override
    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return BwrapConfig(**config)

    @override
    @classmethod
    def default_concurrency(cls) -> int | None:
        return max(1, (os.cpu_count() or 1))

    @override
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        try:
            return await self.session.exec(
                cmd, input=input, cwd=cwd, env=env, user=user, timeout=timeout
            )
        finally:
            record_sandbox_events(self.session)

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        await self.session.write_file(file, contents)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        return await self.session.read_file(file, text)

    @override
    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        pid = self.session.server_pid_on_host
        if pid is None:
            raise ConnectionError("the sandbox is not running")
        who = "" if user in (None, "root") else f" --setuid {self.session.user(user).uid}"
        workdir = self.session.config.workdir
        return SandboxConnection(
            type="bwrap", command=f"nsenter --target {pid} --all{who} --wd={workdir} /bin/bash"
        )


def current_bwrap_session() -> BwrapSession | None:
    """The bwrap session behind the current sample's default sandbox, if it is one.

    Inspect hands out proxies, so `isinstance` on `sandbox()` is never true: unwrap it.
    """
    from inspect_ai.util import sandbox

    try:
        return sandbox().as_type(BwrapSandboxEnvironment).session
    except (TypeError, ProcessLookupError):  # another provider's, or the sample has none
        return None


def sandbox_record() -> dict[str, str]:
    """How the current sample's sandbox was isolated, for its score: the mode (root,
    rootless with separate users, one user) and the mechanisms of its limits and disk
    quota. A sample without a bwrap sandbox of its own (graded in labcoat's sandboxes
    alone, as ResearchCodeBench's) records the mode those run in."""
    session = current_bwrap_session()
    if session is None:
        return {"isolation": str(isolation())}
    return {
        "isolation": str(session.isolation),
        "limits": session.limit_mechanism,
        "disk": session.disk_mechanism,
    }

"""One sample's sandbox: what it needs built first (its environment or task image), then
a running session that mounts it. This is where a sample's other needs (a GPU lease, a
root file system) join as they come."""

from __future__ import annotations

from typing import Self

from labcoat.sandbox._command import bwrap_path
from labcoat.sandbox._config import BwrapConfig
from labcoat.sandbox._environment import ensure_environment
from labcoat.sandbox._image import ensure_image
from labcoat.sandbox._session import BuiltEnvironment, SandboxSession


async def built_for(config: BwrapConfig) -> BuiltEnvironment | None:
    """The environment a sample with `config` mounts, built (or found) first."""
    if config.image is not None:
        image = await ensure_image(config.image)
        return BuiltEnvironment(image.venv, "image", image.notes)
    if config.environment is not None:
        return await ensure_environment(config.environment)
    return None


class BwrapSession(SandboxSession):
    """The sandbox of one sample. Create with `await BwrapSession.create(config)`."""

    @classmethod
    async def create(cls, config: BwrapConfig) -> Self:
        bwrap_path()
        # built (or found) first: a build runs in a sandbox of its own
        return await cls.open(config, await built_for(config))

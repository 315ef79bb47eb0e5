"""What a family tells `labcoat check` about one task before anything runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from labcoat.sandbox import ImageSpec, PythonEnv


@dataclass
class Preflight:
    """A task's needs, as its files declare them, and problems its family already sees.

    Families define `preflight(entry) -> Preflight` in their package; `labcoat check`
    adds what every task shares (loading, LFS pointers, environments, GPUs).
    """

    environments: list[PythonEnv] = field(default_factory=list)
    """The Python environments the task's sandboxes use (built by `check`)."""
    images: list[ImageSpec] = field(default_factory=list)
    """Task images (build steps and install hooks on top of an environment), built by
    `check` after the environments."""
    gpus: int = 0
    """GPUs the task asks for."""
    gpu_model: str | None = None
    """The model they must be (`h100`), where the task says."""
    problems: list[str] = field(default_factory=list)
    """One line each: a missing secret, a missing sidecar, a broken reference, ..."""

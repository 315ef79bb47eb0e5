"""What a task image is made of (`ImageSpec`): the configuration a task gives; building
it is `_image`'s job."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from labcoat.sandbox._requirements import PythonEnv

# directories a build may never keep: the system tree is the host's, /tmp is per sandbox
_NOT_KEEPABLE = (
    "/",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/etc",
    "/proc",
    "/dev",
    "/tmp",
    "/var/tmp",
    "/run",
    "/opt/labcoat",
)


class ImageStep(BaseModel, frozen=True):
    """One command run as root in the build sandbox (a failing step stops the build)."""

    label: str
    """How messages name the step, e.g. `build_steps.json[2] (shell)`."""
    argv: tuple[str, ...]
    cwd: str = "/root"


class ImageSpec(BaseModel, frozen=True):
    """What an image is made of; equal specs (and secret values) give the same image."""

    name: str
    """For messages and the image's record (a task family's name, say)."""
    environment: PythonEnv = PythonEnv()
    """The Python environment the steps start from (built first, as usual)."""
    root_source: str | None = None
    """A host folder whose contents start as /root (the task family's files)."""
    context: str | None = None
    """A host folder the steps see read-only at /opt/labcoat/context (what a Dockerfile's
    COPY copies from)."""
    keep: tuple[str, ...] = ("/root", "/home/agent")
    """Sandbox directories the steps may write and the image keeps, besides the
    environment. Writes anywhere else fail: the system tree is read-only."""
    steps: tuple[ImageStep, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Variables every step sees."""
    secrets: dict[str, str] = Field(default_factory=dict, exclude=True, repr=False)
    """Variables every step sees that must not be written anywhere (never serialized;
    only a digest of them enters the image's key)."""

    @field_validator("keep")
    @classmethod
    def _keepable(cls, keep: tuple[str, ...]) -> tuple[str, ...]:
        for path in keep:
            if not path.startswith("/") or path.rstrip("/") in _NOT_KEEPABLE:
                raise ValueError(f"an image cannot keep {path!r}")
        return keep

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

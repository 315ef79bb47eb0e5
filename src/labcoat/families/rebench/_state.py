"""One sample's own machine state outside the agent's sandbox: /root, /protected and
/var/run/sample_uuid, as they persist in METR's single task container.

In METR's runners every operation (start, each intermediate score, the final score,
teardown) runs in the same container, so what `start()` leaves in /root or /protected
(held-out data, the score log of `metr.task_protected_scoring`) is there when scoring
runs. labcoat runs each operation in a fresh protected sandbox instead, and binds this
state into every one of them; the agent's sandbox never sees it.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from labcoat.sandbox import (
    PROTECTED_GID,
    Bind,
    BuiltImage,
    chown_tree,
    copy_tree_as_root,
    has_separate_root,
    remove_tree,
    sandboxes_root,
)

SAMPLE_UUID_PATH = "/var/run/sample_uuid"


def init_protected_dir(path: Path) -> None:
    """What the standard's image has before any build step: /protected, owned by root and
    the `protected` group, closed to others, with a score log only they may write."""
    path.mkdir(parents=True, exist_ok=True)
    log = path / "score.log"
    log.touch()
    if has_separate_root():
        os.chmod(path, 0o750)  # before the owner changes: rootless, it is not ours after
        os.chmod(log, 0o620)
        chown_tree(path, 0, PROTECTED_GID)


@dataclass(frozen=True)
class SampleState:
    path: Path

    @property
    def root(self) -> Path:
        return self.path / "root"

    @property
    def protected(self) -> Path:
        return self.path / "protected"

    @property
    def uuid_file(self) -> Path:
        return self.path / "sample_uuid"

    def binds(self) -> tuple[Bind, ...]:
        return (
            Bind(source=str(self.root), target="/root", writable=True),
            Bind(source=str(self.protected), target="/protected", writable=True),
            # /var/run is a link to /run in every sandbox: bind where it points
            Bind(source=str(self.uuid_file), target="/run/sample_uuid"),
        )

    @classmethod
    def create(cls, family_dir: Path, image: BuiltImage | None, sample_uuid: str) -> SampleState:
        """A fresh state: /root and /protected from the family's image (else the family's
        files and an empty /protected), the sample's uuid."""
        state = cls(sandboxes_root() / f"rebench-state-{uuid.uuid4().hex[:12]}")
        state.path.mkdir(mode=0o700)
        if image is not None:
            copy_tree_as_root(image.dirs["/root"], state.root, mode=0o700)
            copy_tree_as_root(image.dirs["/protected"], state.protected)
        else:
            copy_tree_as_root(family_dir, state.root, mode=0o700)
            if has_separate_root():
                chown_tree(state.root, 0, 0)
            init_protected_dir(state.protected)
        state.uuid_file.write_text(sample_uuid)
        os.chmod(state.uuid_file, 0o644)
        return state

    def remove(self) -> None:
        if os.environ.get("LABCOAT_KEEP_SANDBOXES") != "1":
            remove_tree(self.path)


def copy_image_home(image: BuiltImage | None, home: Path) -> None:
    """What the build steps and install() left in /home/agent, into a sample's home
    (owners kept: start() hands the home to the agent as the standard's runners do)."""
    if image is not None:
        source = image.dirs["/home/agent"]
        if any(source.iterdir()):
            copy_tree_as_root(source, home)

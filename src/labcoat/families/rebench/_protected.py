"""Files a family protects in /home/agent stay as the family left them when scoring runs.

`metr.task_protected_scoring` gives files in /home/agent (score.py, utilities the scorer
imports) to root and the `protected` group, readable and unwritable by the agent. The
agent still owns /home/agent itself, so it can delete such a file and put its own in its
place: in METR's container the scorer would then run the agent's score.py with the
protected group. labcoat keeps a copy of every protected file after `start()`; before
each scoring, one that was replaced or removed is put back and the run is flagged.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from labcoat.families.rebench._state import SampleState
from labcoat.sandbox import PROTECTED_GID, Isolation, as_sandbox_root, has_separate_root, isolation

MAX_FILE_BYTES = 64 << 20
MAX_TOTAL_BYTES = 512 << 20
_INDEX = "protected-home.json"


def _signature(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_uid, st.st_gid, st.st_mode]


def snapshot_protected(home: Path, state: SampleState) -> list[str]:
    """Copy the protected files of `home` into the sample's state; their paths."""
    if not has_separate_root():
        return []  # one user only: there is no protected group to honour
    return _as_root("snapshot", home, state)


def restore_protected(home: Path, state: SampleState) -> list[str]:
    """Put back every protected file that changed since the snapshot; their paths."""
    return _as_root("restore", home, state)


def _as_root(action: str, home: Path, state: SampleState) -> list[str]:
    """Run `action` with root's rights over the sandbox's files: here as root (or one
    user), else as root of the namespace that maps the subordinate range, where the
    files' owners and the protected group have their sandbox ids."""
    if isolation() is not Isolation.SEPARATE_USERS:
        return ACTIONS[action](home, state)
    argv = [sys.executable, "-I", "-m", __name__, action, str(home), str(state.path)]
    return list(json.loads(as_sandbox_root(argv)))


def _snapshot(home: Path, state: SampleState) -> list[str]:
    copies = state.path / "protected-home"
    index: dict[str, list[int]] = {}
    total = 0
    for path in sorted(home.rglob("*")):
        try:
            st = path.lstat()
        except OSError:
            continue
        if not path.is_file() or path.is_symlink() or st.st_gid != PROTECTED_GID:
            continue
        if st.st_size > MAX_FILE_BYTES or total + st.st_size > MAX_TOTAL_BYTES:
            continue  # a protected dataset: too large to keep a copy of
        total += st.st_size
        rel = path.relative_to(home).as_posix()
        target = copies / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        index[rel] = _signature(st)
    (state.path / _INDEX).write_text(json.dumps(index))
    return list(index)


def _put_back(home: Path, rel: str, data: bytes, mode: int) -> None:
    """Write `data` at home/rel as root:protected, never following a link the agent
    made (the harness runs as root on the host: a link must not lead it elsewhere)."""
    *parents, name = rel.split("/")
    nofollow = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(home, nofollow)
    try:
        for part in parents:
            try:
                child = os.open(part, nofollow, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, dir_fd=fd)
                child = os.open(part, nofollow, dir_fd=fd)
            except OSError:  # a link or a file where the folder was
                os.unlink(part, dir_fd=fd)
                os.mkdir(part, dir_fd=fd)
                child = os.open(part, nofollow, dir_fd=fd)
            os.close(fd)
            fd = child
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            shutil.rmtree(name, dir_fd=fd)
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd)
        try:
            os.write(out, data)
            os.fchown(out, 0, PROTECTED_GID)
            os.fchmod(out, mode & 0o7777)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _restore(home: Path, state: SampleState) -> list[str]:
    index_file = state.path / _INDEX
    if not index_file.exists():
        return []
    index: dict[str, list[int]] = json.loads(index_file.read_text())
    changed = []
    for rel, signature in index.items():
        path = home / rel
        try:
            same = _signature(path.lstat()) == signature
        except OSError:
            same = False
        if same:
            continue
        changed.append(rel)
        data = (state.path / "protected-home" / rel).read_bytes()
        _put_back(home, rel, data, signature[5])
        index[rel] = _signature(path.lstat())
    if changed:  # what was put back is the protected file from now on
        index_file.write_text(json.dumps(index))
    return changed


ACTIONS = {"snapshot": _snapshot, "restore": _restore}

if __name__ == "__main__":  # _as_root's way in: ACTION HOME STATE, the paths as JSON
    action, home, state = sys.argv[1:4]
    print(json.dumps(ACTIONS[action](Path(home), SampleState(Path(state)))))

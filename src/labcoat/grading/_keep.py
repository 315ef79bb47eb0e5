"""Keep the workspace a scorer grades beside the eval log, so it can be graded again.

Each family's scorer calls `keep_workspace` once the agent has stopped and before it
grades: the workspace (what `agent_workspace(path)` shows the grader), the submission
text and the store entries the scorer reads are saved in the content-addressed store of
`_keepstore`, under `<the log's folder>/workspaces`. Saving never changes a score: a
failure is logged and returned as `{"error": ...}` for the score's metadata.
`labcoat regrade` reads the manifests back (`restore_workspace`). See docs/regrade.md.
"""

from __future__ import annotations

import datetime
import functools
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.log._samples import sample_active
from inspect_ai.solver import TaskState
from inspect_ai.util import sandbox, store

from labcoat._errors import LabcoatError
from labcoat._util.env import env_value
from labcoat._version import __version__
from labcoat.grading._bytecode import TIMEOUT_S as BYTECODE_SECONDS
from labcoat.grading._bytecode import bytecode_flags, remove_bytecode
from labcoat.grading._keepstore import (
    DEFAULT_EXCLUDE,
    Caps,
    KeepStopped,
    Tree,
    excluded,
    manifest_path,
    materialize,
    read_manifest,
    save_tree,
    write_manifest,
)
from labcoat.grading._scoring_time import share_of_scoring_time
from labcoat.grading._workspace import agent_workspace, copy_into_sandbox
from labcoat.sandbox import current_bwrap_session

logger = logging.getLogger(__name__)

KEPT = "workspace"
"""Score metadata key: where the sample's workspace was kept (or why it was not)."""
KEEP_SPEC = "keep_workspace"
"""Sample metadata key: the task's `keep_workspace` sidecar entry (`{"exclude": [...]}`)."""
REPLAYED = "labcoat:regrade:replayed"
"""Store key set by `labcoat regrade`'s replay: the manifest the workspace came from."""
STORE_ROOT = "workspaces"
DEFAULT_FILE_MB = 100.0
DEFAULT_SAMPLE_MB = 1024.0
MB = 1024 * 1024
KEEP_SECONDS = 60.0
"""The longest a keep may take (at most `KEEP_SHARE` of what is left of the scoring
budget): a workspace may delay its score by seconds, never stop it."""
KEEP_SHARE = 0.25
BYTECODE_SHARE = 0.1


def caps() -> Caps:
    file_mb = env_value("LABCOAT_KEEP_FILE_MB", DEFAULT_FILE_MB)
    sample_mb = env_value("LABCOAT_KEEP_SAMPLE_MB", DEFAULT_SAMPLE_MB)
    return Caps(file_bytes=int(file_mb * MB), sample_bytes=int(sample_mb * MB))


def store_root() -> Path:
    """`<folder of the log being written>/workspaces`; with no local log (no active
    sample, or a log on a remote file system): `$INSPECT_LOG_DIR/workspaces`, else
    `./logs/workspaces` (Inspect's default log folder)."""
    active = sample_active()
    location = str(getattr(active, "log_location", "") or "")
    if location and "://" not in location.removeprefix("file://"):
        return Path(location.removeprefix("file://")).parent / STORE_ROOT
    return Path(os.environ.get("INSPECT_LOG_DIR") or "logs") / STORE_ROOT


def task_excludes(metadata: dict[str, Any]) -> tuple[str, ...]:
    spec = metadata.get(KEEP_SPEC) or {}
    return tuple(str(p) for p in spec.get("exclude") or ())


async def keep_workspace(
    state: TaskState,
    path: str | None,
    *,
    store_keys: Sequence[str] = (),
    submission: bool = False,
) -> dict[str, Any]:
    """Keep `path` of the agent's sandbox (None: no workspace, the submission alone),
    `state.output.completion` and the store entries `store_keys`; what to put in the
    score's metadata under `KEPT`. `submission`: the family grades the completion, so
    the metadata shows it too.

    First the workspace is made what the keep saves: its bytecode is removed (the
    grader then runs the sources that are kept; `_bytecode`), also when nothing is kept.
    Bounded: caps judge every file before it is read, and the walk stops (nothing kept)
    at `KEEP_SECONDS` or its share of the scoring time, or when the scorer is
    cancelled."""
    settled: dict[str, Any] = {}
    if path is not None:
        outcome = await remove_bytecode(
            path, share_of_scoring_time(BYTECODE_SECONDS, BYTECODE_SHARE)
        )
        settled["bytecode_removed"] = outcome["removed"]
        settled.update({f"bytecode_{k}": v for k, v in outcome.items() if k != "removed"})
    replayed = store().get(REPLAYED)
    if replayed:  # a regrade: the workspace is the kept one, already saved
        return {"manifest": replayed, "replayed": True, **settled}
    if env_value("LABCOAT_KEEP_WORKSPACES", "1") == "0":
        return {"error": "not kept (LABCOAT_KEEP_WORKSPACES=0)", **settled}
    completion = state.output.completion if state.output else ""
    try:
        root = store_root()
        exclude = (*DEFAULT_EXCLUDE, *task_excludes(state.metadata))
        body: dict[str, Any] = {}
        if path is not None:
            async with agent_workspace(path) as host:
                tree = await _save_bounded(host, root, exclude)
            body = {
                "files": tree.files,
                "links": tree.links,
                "dirs": tree.dirs,
                "hardlinks": tree.hardlinks,
                "by_reference": tree.by_reference,
                "excluded": tree.excluded,
                "skipped": tree.skipped,
            }
        manifest = {
            "sample_uuid": state.uuid,
            "sample_id": state.sample_id,
            "epoch": state.epoch,
            "path": path,
            "exclude": list(exclude),
            "caps": vars(caps()),
            "submission": completion,
            "store_keys": list(store_keys),
            "store": {key: store().get(key) for key in store_keys if key in store()},
            "saved_at": datetime.datetime.now(datetime.UTC).isoformat(),
            "labcoat_version": __version__,
            **body,
        }
        written = await anyio.to_thread.run_sync(write_manifest, root, state.uuid, manifest)
    except KeepStopped as ex:  # a part of a workspace would regrade what was not graded
        logger.warning("did not keep the workspace of sample %s: %s", state.sample_id, ex)
        return {"error": f"not kept: the walk stopped ({ex})", **settled}
    except Exception as ex:  # never the score's failure: say so beside it
        logger.warning("could not keep the workspace of sample %s: %s", state.sample_id, ex)
        return {"error": f"{type(ex).__name__}: {ex}", **settled}
    kept: dict[str, Any] = {
        "manifest": f"{STORE_ROOT}/{written.relative_to(root).as_posix()}",
        "files": len(body.get("files", {})),
        "bytes": sum(e["size"] for e in body.get("files", {}).values()),
        "hardlinks": len(body.get("hardlinks", {})),
        "by_reference": sorted(body.get("by_reference", {})),
        **settled,
    }
    if submission:
        kept["submission"] = completion
    return kept


def kept_flags(kept: dict[str, Any]) -> list[str]:
    """Integrity flags of a keep (`keep_workspace`'s result): bytecode that may have
    stayed in the workspace the grader read."""
    outcome = {k.removeprefix("bytecode_"): v for k, v in kept.items() if k.startswith("bytecode_")}
    return bytecode_flags(outcome)


async def _save_bounded(host: Path, root: Path, exclude: tuple[str, ...]) -> Tree:
    """`save_tree` in a worker thread that stops at its deadline, or soon after the
    scorer is cancelled (the thread is abandoned at once and told to stop)."""
    deadline = time.monotonic() + share_of_scoring_time(KEEP_SECONDS, KEEP_SHARE)
    cancel = threading.Event()
    save = functools.partial(save_tree, deadline=deadline, cancel=cancel)
    try:
        return await anyio.to_thread.run_sync(
            save, host, root, caps(), exclude, abandon_on_cancel=True
        )
    finally:
        cancel.set()


def find_manifest(log_dir: Path, sample_uuid: str) -> Path | None:
    """The manifest of sample `sample_uuid` kept beside a log in `log_dir`."""
    path = manifest_path(log_dir / STORE_ROOT, sample_uuid)
    return path if path.is_file() else None


async def restore_workspace(state: TaskState, manifest_file: Path) -> dict[str, Any]:
    """Put a kept sample back in this sample: its workspace files over the fresh
    setup's (paths the manifest excluded stay as the setup made them), its submission
    and its store entries. Returns what could not be restored."""
    manifest = read_manifest(manifest_file)
    root = manifest_file.parent.parent
    saved = manifest.get("store") or {}
    for key in manifest.get("store_keys") or []:  # as the scorer found them, absent ones too
        if key in saved:
            store().set(key, saved[key])
        elif key in store():
            store().delete(key)
    state.output.completion = manifest.get("submission") or ""
    store().set(REPLAYED, str(manifest_file))
    path = manifest.get("path")
    if path is None:
        return {"missing": []}
    exclude = tuple(manifest.get("exclude") or ())
    with tempfile.TemporaryDirectory(prefix="labcoat-restore-") as tmp:
        missing = await anyio.to_thread.run_sync(materialize, manifest, root, Path(tmp))
        await _clear(path, exclude)
        await copy_into_sandbox(Path(tmp), path)
    return {"missing": missing}


async def _clear(path: str, exclude: tuple[str, ...]) -> None:
    """Empty `path` of the sandbox but for the entries the manifest excluded."""
    session = current_bwrap_session()
    host = session.host_path(path) if session is not None else None
    if host is not None:

        def clear() -> None:
            for entry in list(host.iterdir()) if host.is_dir() else []:
                if excluded(entry.name, exclude):
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()

        await anyio.to_thread.run_sync(clear)
        return
    names = " ".join(f"! -name '{p}'" for p in exclude if "/" not in p and "'" not in p)
    result = await sandbox().exec(
        ["sh", "-c", f"find '{path}' -mindepth 1 -maxdepth 1 {names} -exec rm -rf {{}} +"]
    )
    if not result.success:
        raise LabcoatError(f"could not clear {path} for the kept workspace: {result.stderr}")

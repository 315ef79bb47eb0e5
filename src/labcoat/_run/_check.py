"""`labcoat check`: before a long run, every problem that would stop a task, found now."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from labcoat._errors import LabcoatError
from labcoat._util.lfs import LFS_POINTERS, LfsPointerError, lfs_pointers, pointer_lines
from labcoat.families import TaskEntry, family_spec
from labcoat.families._preflight import Preflight
from labcoat.sandbox import (
    EnvironmentBuildError,
    ImageSpec,
    PythonEnv,
    ensure_environment,
    ensure_image,
    gpu_shortfall,
    index_reachable,
)

PROBLEM_KIND = "problem_kind"
"""`TaskEntry.extra` key a family may set on a broken entry: the kind of its problem
(`secrets`, `build`, `environment`, `lfs`); `load` without it."""

NEEDS_NETWORK = (
    "its environment needs packages from an index this machine cannot reach (give pip a "
    "wheelhouse, PIP_FIND_LINKS, or --python an interpreter that has them)"
)


@dataclass(frozen=True)
class Problem:
    task: str
    family: str
    kind: str
    """`load`, `lfs`, `environment`, `build`, `network`, `gpu`, `secrets` or the family's
    own kind (RE-Bench: `aux_vm`)."""
    message: str

    def line(self) -> str:
        return f"{self.task} ({self.family}): {self.kind}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {
            "task": self.task,
            "family": self.family,
            "kind": self.kind,
            "message": self.message,
        }


@dataclass
class Checked:
    problems: list[Problem] = field(default_factory=list)
    dates: dict[str, list[str]] = field(default_factory=dict)
    """{date: the tasks whose environments pip resolves as of it} (the rest: as of now)."""


def preflight_of(entry: TaskEntry) -> Preflight:
    hook = family_spec(entry.family).preflight
    return hook(entry) if hook is not None else Preflight()


async def check_entries(entries: list[TaskEntry], build: bool = True) -> Checked:
    """Every problem of every entry, and the dates their environments are resolved as of;
    environments are built (and cached) unless not `build`."""
    checked = Checked()
    problems = checked.problems
    built: dict[PythonEnv, str | None] = {}  # one build (or failure) per environment
    # without an index, an environment that cannot be built needs the network (or a
    # wheelhouse, or --python): say so, as a kind of its own
    offline = build and not await anyio.to_thread.run_sync(index_reachable)
    images: dict[ImageSpec, str | None] = {}
    for entry in entries:

        def add(kind: str, message: str, entry: TaskEntry = entry) -> None:
            problems.append(Problem(entry.id, entry.family, kind, message))

        pointers = await anyio.to_thread.run_sync(_pointers_in, entry)
        for line in pointer_lines(pointers):
            add("lfs", line)
        # a task broken by Git LFS pointers alone is checked like the others: its
        # pointers are its `lfs` problems, not a `load` one besides; another broken one
        # says why in the kind its family gives (secrets, build, ...), else `load`
        if entry.problem and not entry.extra.get(LFS_POINTERS):
            kind = entry.extra.get(PROBLEM_KIND) or "load"
            if not (kind == "lfs" and pointers):  # else named above, one line each
                add(kind, entry.problem)
            continue
        try:
            info = preflight_of(entry)
        except LfsPointerError as ex:  # those in the task's folder are listed above
            for line in pointer_lines([p for p in ex.paths if p not in pointers]):
                add("lfs", line)
            continue
        except LabcoatError as ex:
            add("load", str(ex))
            continue
        for date in sorted({e.uploaded_prior_to for e in info.environments if e.uploaded_prior_to}):
            checked.dates.setdefault(date, []).append(entry.id)
        for message in info.problems:
            kind, _, text = message.partition(": ")
            add(kind, text) if text else add("task", message)
        shortfall = gpu_shortfall(info.gpus, info.gpu_model)
        if shortfall:
            add("gpu", shortfall)
        if not build or shortfall:  # a task that cannot run here needs nothing built here
            continue
        for env in info.environments:
            if env not in built:
                try:
                    await ensure_environment(env)
                    built[env] = None
                except EnvironmentBuildError as ex:
                    built[env] = ex.reason + (f" (pip's output: {ex.log})" if ex.log else "")
            if built[env] is not None and offline:
                add("network", f"{NEEDS_NETWORK}: {built[env]} [{env.describe()}]")
            elif built[env] is not None:
                add("environment", f"{built[env]} [{env.describe()}]")
        if any(built[env] is not None for env in info.environments):
            continue  # an image starts from its environment: nothing more to learn
        for image in info.images:
            if image not in images:
                try:
                    await ensure_image(image)
                    images[image] = None
                except EnvironmentBuildError as ex:
                    images[image] = ex.reason + (f" (output: {ex.log})" if ex.log else "")
            if images[image] is not None:
                add("build", str(images[image]))
    return checked


def _pointers_in(entry: TaskEntry) -> list[Path]:
    return list(lfs_pointers(entry.path))


def describe_target(entries: list[TaskEntry]) -> str:
    families = sorted({e.family for e in entries})
    return f"{len(entries)} task(s) ({', '.join(families)})"


DOCKER_ENGINE_NEEDED = (24, 0, 6)
"""The oldest Docker Engine Inspect's docker provider accepts (its prereqs.py)."""

DOCKER_GUARANTEES = (
    "--sandbox docker is experimental and weaker than bwrap: it keeps graders in fresh bwrap "
    "sandboxes on the host (they see a tar copy of the agent's workspace), kept workspaces "
    "(the same copy), the memory limit and network off or on; it drops the task's own image "
    "(a python:3.11-slim image with its requirements, built from a registry: not offline), "
    "the process, CPU and disk limits, GPUs, the filtering proxy and its record of requests "
    "(a task's network is unfiltered), labcoat's seccomp filter and the isolation mode "
    "recorded with each score (docs/sandbox.md, 'Other sandboxes')"
)


def docker_engine_problem() -> str | None:
    """Why Inspect's docker provider cannot run here (no client, no engine, an engine too
    old), in one line; None where it can."""
    if shutil.which("docker") is None:
        return "no `docker` client on PATH"
    try:
        done = subprocess.run(
            ["docker", "version", "--format", "{{json .Server}}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"`docker version` failed: {ex}"
    server = _json_or_none(done.stdout.strip())
    if done.returncode != 0 or not isinstance(server, dict):
        said = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return f"no Docker Engine answers ({said})"
    version = str(server.get("Version", ""))
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:3])  # 20.10.24+dfsg1
    if parts < DOCKER_ENGINE_NEEDED:
        needed = ".".join(map(str, DOCKER_ENGINE_NEEDED))
        return (
            f"Docker Engine {version or '(no version)'} is older than {needed}, which "
            "Inspect's docker provider needs"
        )
    return None


def require_docker_engine() -> None:
    """Stop in one line where `--sandbox docker` cannot run here, before anything starts
    (Inspect's provider would say so only after the log folder is made)."""
    problem = docker_engine_problem()
    if problem is not None:
        raise LabcoatError(
            f"--sandbox docker cannot run here: {problem} (an experimental sandbox, "
            "weaker than bwrap: docs/sandbox.md)"
        )


def _json_or_none(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None

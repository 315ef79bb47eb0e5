"""Which papers can be graded here: environments built per paper, problems per paper.

Upstream's one environment serves all twenty papers, and a few of its lines cannot be
installed on a machine without internet (`git+https://...` sources) or at all (a pin
to a version that never reached the index). One such line must not cost every paper:

1. The environment is built by pip (`labcoat.sandbox.ensure_environment`). When pip
   fails and its output names the requirement line that failed (pip's `(line N)` of
   the requirements file, or the name in "No matching distribution found for X"),
   that line is left out, with pip's one-line reason, and pip runs again. Lines left
   out are remembered on disk (`<cache>/researchcodebench/`), so a later run builds the
   smaller environment directly; delete that folder to try them again.
2. Each paper's tests are then checked, inside its grading sandbox, for the modules
   they import from outside the paper. A paper whose modules are missing is
   unavailable, with the reason: the modules, and the lines left out that provide them.
3. Every other paper is graded. A paper whose environment fails for a reason no line
   can be blamed for is unavailable with pip's reason.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from labcoat._errors import LabcoatError
from labcoat._unavailable import PREFIX
from labcoat.families.researchcodebench._environment import MissingModulesError
from labcoat.families.researchcodebench._papers import Paper
from labcoat.sandbox import (
    EnvironmentBuildError,
    PythonEnv,
    cache_dir,
    ensure_environment,
    specifiers,
)

logger = logging.getLogger(__name__)

MAX_LEFT_OUT = 20  # lines one environment may lose before it counts as unbuildable
_LINE_REF = re.compile(r"\(line (\d+)\)\)*\s*$")
_STEP = re.compile(r"^(Collecting|Obtaining|Processing) ")
_NO_DIST = re.compile(
    r"(?:No matching distribution found for|Could not find a version that satisfies the "
    r"requirement) (?P<req>[A-Za-z0-9_.\-\[\],]+)"
)
_DEPENDS = re.compile(r"^\s*(?P<name>[A-Za-z0-9_.\-]+) [\w.+!-]+ depends on ")


@dataclass(frozen=True)
class BuiltPaperEnvironment:
    """What a paper is graded in: the environment that could be built from its lines."""

    env: PythonEnv
    """The lines actually installed (those that failed left out)."""
    notes: tuple[str, ...] = ()
    """Changes made to install here: CPU builds, closest versions, lines left out."""
    left_out: tuple[tuple[str, str], ...] = ()
    """(requirement line, pip's reason) for every line that could not be installed."""


@dataclass
class PaperStatus:
    """A paper's environment status: ready to grade, or unavailable with the reason."""

    paper: str
    env: PythonEnv | None = None
    notes: list[str] = field(default_factory=list)
    unavailable: str | None = None

    def describe(self) -> str:
        if self.unavailable:
            return f"unavailable: {self.unavailable}"
        return "built" + (f" ({len(self.notes)} note(s))" if self.notes else "")


# --- building with the lines that can be installed ---------------------------------------


def _record_path(env: PythonEnv) -> Path:
    digest = hashlib.sha256(env.content_digest().encode()).hexdigest()[:16]
    return cache_dir() / "researchcodebench" / f"left-out-{digest}.json"


def _reduced(env: PythonEnv, left_out: list[tuple[str, str]]) -> PythonEnv:
    dropped = {line for line, _ in left_out}
    return env.model_copy(
        update={"requirements": tuple(line for line in env.requirements if line not in dropped)}
    )


def blamed_line(lines: tuple[str, ...], pip_output: str) -> str | None:
    """The requirement line pip failed on, when its output says which; else None.

    A conflict between requirements (ResolutionImpossible) blames the root requirement
    whose dependencies conflict; other failures blame the line that pip was collecting
    when it failed (pip names it `(from -r FILE (line N))`), or the one named by
    "No matching distribution found for X".
    """
    text = pip_output.splitlines()
    error_at = next(
        (i for i, line in enumerate(text) if line.startswith(("ERROR:", "error:"))), len(text)
    )
    if "ResolutionImpossible" in pip_output or "conflict is caused by" in pip_output:
        for line in text:
            depends = _DEPENDS.match(line)
            if depends:
                found = _line_named(lines, depends["name"])
                if found is not None:
                    return found
        return None
    for line in reversed(text[:error_at]):
        if _STEP.match(line.strip()):
            ref = _LINE_REF.search(line)
            if ref and 1 <= int(ref[1]) <= len(lines):
                return lines[int(ref[1]) - 1]
            break
    missing = _NO_DIST.search(pip_output)
    if missing:
        return _line_named(lines, re.split(r"[<>=!~\[;,]", missing["req"])[0])
    return None


def _line_named(lines: tuple[str, ...], name: str) -> str | None:
    wanted = _norm(name)
    for line in lines:
        if line.startswith("-") and not line.startswith(("-e ", "--editable")):
            continue
        if wanted in {_norm(n) for n in project_names(line)}:
            return line
    return None


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_names(line: str) -> list[str]:
    """Names a requirement line may install under: its name, `#egg=`, or its repo's name."""
    text = line.removeprefix("-e ").removeprefix("--editable ").strip()
    names: list[str] = []
    egg = re.search(r"[#&]egg=([A-Za-z0-9_.\-]+)", text)
    if egg:
        names.append(egg[1])
    if "://" in text:
        repo = re.search(r"/([A-Za-z0-9_.\-]+?)(?:\.git)?(?:@[^/#]*)?(?:#.*)?$", text)
        if repo:
            names.append(repo[1])
        at = re.match(r"^([A-Za-z0-9_.\-\[\]]+)\s*@\s*\S+://", text)  # name @ URL
        if at:
            names.append(at[1].split("[")[0])
    else:
        plain = re.match(r"^([A-Za-z0-9_.\-]+)", text)
        if plain:
            names.append(plain[1])
    return names


async def build_leaving_out(
    env: PythonEnv, known: tuple[tuple[str, str], ...] = ()
) -> BuiltPaperEnvironment:
    """Build `env`; lines pip fails on are left out (noted) and the rest installed.

    `known`: lines already known not to install (from a smaller environment).
    Raises EnvironmentBuildError when pip fails for a reason no line can be blamed for.
    """
    record = _record_path(env)
    left_out: list[tuple[str, str]] = [k for k in known if k[0] in env.requirements]
    if record.is_file():
        try:
            left_out = [(str(a), str(b)) for a, b in json.loads(record.read_text())["left_out"]]
        except (ValueError, KeyError, TypeError):
            left_out = []
    while True:
        attempt = _reduced(env, left_out)
        try:
            built = await ensure_environment(attempt)
            break
        except EnvironmentBuildError as exc:
            output = exc.log.read_text(errors="replace") if exc.log and exc.log.is_file() else ""
            line = blamed_line(attempt.requirements, output or exc.reason)
            if line is None or len(left_out) >= MAX_LEFT_OUT:
                raise
            logger.warning("environment %s: left out %r: %s", env.describe(), line, exc.reason)
            left_out.append((line, exc.reason))
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps({"left_out": left_out}, indent=2))
    notes = [f"left out {line!r}: {reason}" for line, reason in left_out]
    return BuiltPaperEnvironment(attempt, (*built.notes, *notes), tuple(left_out))


# --- one status per paper ---------------------------------------------------------------


def missing_reason(missing: dict[str, str], left_out: tuple[tuple[str, str], ...]) -> str:
    """One line: the modules the tests need, and the lines left out that would give them."""
    causes: list[str] = []
    for module in sorted(missing):
        for line, reason in left_out:
            names = {_norm(n) for n in project_names(line)}
            key = _norm(module)
            if any(n == key or n.startswith(key) or key.startswith(n) for n in names):
                cause = f"{line} ({reason})"
                if cause not in causes:
                    causes.append(cause)
    modules = ", ".join(sorted(missing))
    if causes:
        return f"needs {modules}, not installable here: " + "; ".join(causes)
    return f"needs {modules}, which its environment does not provide"


# module -> the distribution that provides it, where the names differ
DISTRIBUTIONS = {
    "PIL": "pillow",
    "yaml": "PyYAML",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "cv2": "opencv-python",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
}


def _provided_by_left_out(module: str, left_out: tuple[tuple[str, str], ...]) -> bool:
    key = _norm(module)
    for line, _ in left_out:
        names = {_norm(n) for n in project_names(line)}
        if any(n == key or n.startswith(key) or key.startswith(n) for n in names):
            return True
    return False


async def paper_statuses(
    papers: list[Paper],
    environments: dict[str, PythonEnv],
    notes: dict[str, list[str]],
    check: object,
) -> dict[str, PaperStatus]:
    """Build every paper's environment and check its modules; one status per paper.

    `check(paper, env)` opens the paper's grading sandbox and raises
    MissingModulesError (with `.missing`) when its tests import what `env` lacks.

    An environment that lost lines (left out) also lost what they would have brought
    along: a module the tests import that no left-out line is named after (matplotlib,
    which upstream gets through mmcv's dependencies) is added from the index, once for
    every paper of that environment, and noted.
    """
    builds: dict[PythonEnv, BuiltPaperEnvironment | EnvironmentBuildError] = {}

    async def build(
        env: PythonEnv, known: tuple[tuple[str, str], ...] = ()
    ) -> BuiltPaperEnvironment | EnvironmentBuildError:
        if env not in builds:
            try:
                builds[env] = await build_leaving_out(env, known)
            except EnvironmentBuildError as exc:
                builds[env] = exc
        return builds[env]

    async def check_one(paper: Paper, built: BuiltPaperEnvironment) -> dict[str, str] | str | None:
        """None when ready, the missing modules, or another reason it cannot run."""
        try:
            await check(paper, built.env)  # type: ignore[operator]
        except MissingModulesError as exc:
            return exc.missing
        except LabcoatError as exc:
            return str(exc).removeprefix(PREFIX).strip()
        return None

    statuses = {p.id: PaperStatus(p.id, notes=list(notes.get(p.id, []))) for p in papers}
    outcome: dict[str, dict[str, str] | str | None] = {}
    for paper in papers:
        built = await build(environments[paper.id])
        if isinstance(built, EnvironmentBuildError):
            outcome[paper.id] = built.reason
            continue
        outcome[paper.id] = await check_one(paper, built)

    final: dict[str, BuiltPaperEnvironment | EnvironmentBuildError] = {
        p.id: builds[environments[p.id]] for p in papers
    }
    for wanted in dict.fromkeys(environments[p.id] for p in papers):
        built = builds[wanted]
        if isinstance(built, EnvironmentBuildError) or not built.left_out:
            continue
        sharing = [p for p in papers if environments[p.id] == wanted]
        lost: dict[str, list[str]] = {}
        for paper in sharing:
            missing = outcome[paper.id]
            if isinstance(missing, dict):
                for module in missing:
                    if not _provided_by_left_out(module, built.left_out):
                        lost.setdefault(DISTRIBUTIONS.get(module, module), []).append(paper.id)
        if not lost:
            continue
        extra = sorted(lost)
        supplemented = await build(wanted.plus(specifiers(*extra)), built.left_out)
        if isinstance(supplemented, EnvironmentBuildError):
            continue
        added = [n for n in extra if not any(line == n for line, _ in supplemented.left_out)]
        note = (
            f"added {', '.join(added)}: imported by the tests of "
            f"{', '.join(sorted({p for ids in lost.values() for p in ids}))}; upstream's "
            "environment provides them only through lines left out here"
        )
        for paper in sharing:
            final[paper.id] = supplemented
            statuses[paper.id].notes.append(note)
            if outcome[paper.id] is None or isinstance(outcome[paper.id], dict):
                outcome[paper.id] = await check_one(paper, supplemented)

    for paper in papers:
        status, built, result = statuses[paper.id], final[paper.id], outcome[paper.id]
        if isinstance(built, EnvironmentBuildError):
            status.unavailable = built.reason
            continue
        status.env = built.env
        status.notes = [*status.notes, *(n for n in built.notes if n not in status.notes)]
        if isinstance(result, dict):
            status.unavailable = missing_reason(result, built.left_out)
        elif isinstance(result, str):
            status.unavailable = result
        await anyio.lowlevel.checkpoint()
    return statuses

"""The `check` judge: grades leaves by the deterministic checks of the paper's sidecar.

File, regex and JSON checks read the judge's file views; `command` checks are delegated to
an injected async runner, so the harness decides where a submission's code may run (the
sandbox). A leaf passes only when all its checks pass. A leaf with no check, or whose check
could not run, is graded invalid (score 0, valid_score false), so a partly checked rubric
shows as such instead of as a row of honest zeros.

Expected values are the grader's own (`_reference.py`): a `compare` python check runs the
submission's code on inputs drawn at grading time and compares with the paper's reference
on the same inputs; `rerun.recompute` checks recompute claimed per-seed results with the
reference alone, on seeds drawn after both reproductions, in a process no code of the
submission runs in. A claimed value the reference does not give is not established: no
check that reads it passes; and where such values meet the paper's numbers (a fabrication's
mark) no check on the executed submission passes, flagged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labcoat._errors import LabcoatError
from labcoat.families.paperbench._commands import (
    MAX_OUTPUT_CHARS,
    CommandRequest,
    CommandResult,
    CommandRunner,
)
from labcoat.families.paperbench._files import FileView
from labcoat.families.paperbench._graded import LeafGrade
from labcoat.families.paperbench._judge import (
    GroupJudge,
    GroupResult,
    JudgeInput,
    LeafGroup,
    Reproduction,
)
from labcoat.families.paperbench._python_check import new_token, python_command, verdict
from labcoat.families.paperbench._reference import (
    RESULT_TRAILER,
    compare_results,
    new_input_seed,
    parse_result,
    rng_preamble,
    run_reference,
)
from labcoat.families.paperbench._rubric import NodePath, RubricNode
from labcoat.families.paperbench._sidecar import (
    EXECUTED,
    RERUN,
    SUBMISSION,
    Check,
    CommandCheck,
    FileExistsCheck,
    JsonCompareCheck,
    JsonKey,
    JsonValueCheck,
    PythonCheck,
    RecomputeCheck,
    RegexCheck,
    Sidecar,
    draw_check_seed,
    format_json_key,
    load_sidecar,
    parse_json_key,
)

__all__ = [
    "MAX_OUTPUT_CHARS",
    "NO_CHECK",
    "CheckJudge",
    "CommandRequest",
    "CommandResult",
    "CommandRunner",
    "host_command_runner",
]

NO_CHECK = "no check: this leaf has no entry in the paper's labcoat.yaml"
# Clock granularity and copy delays: a file this much older than the run still counts as fresh.
FRESH_SLACK_S = 2.0


@dataclass(frozen=True)
class Outcome:
    """One check's verdict: passed, failed (the submission's fault), or could not run."""

    passed: bool
    detail: str
    valid: bool = True
    suspect: bool = False
    """Failed in the way a fabrication fails (results that ignore the seed): flagged."""


@dataclass(frozen=True)
class CheckContext:
    """`prepare`'s result: the sidecar, why results on the executed submission cannot
    count (no re-run was made, or results did not change with the seed), if they cannot,
    and the claimed values the reference does not give (by view, then `format_json_key`)."""

    sidecar: Sidecar
    executed_blocked: Outcome | None = None
    unestablished: Mapping[str, Mapping[tuple[str, str], str]] = field(default_factory=dict)


class CheckJudge(GroupJudge):
    """Grades each leaf by its sidecar checks; makes no model calls.

    A paper without a sidecar is refused (an error, not a row of zeros). When the sidecar
    asks for a re-run (`rerun:`), every check on the executed submission must pass on both
    reproductions, and the `must_change` results must differ between them.
    """

    name = "check"

    def __init__(
        self,
        runner: CommandRunner | None = None,
        sidecar: Sidecar | None = None,
        max_concurrency: int = 4,
        reference: Path | None = None,
    ) -> None:
        self.runner = runner
        self.sidecar = sidecar
        self.max_concurrency = max_concurrency
        self.reference = reference
        """The paper's reference implementation; None: the paper's `reference_submission/`."""

    def _reference_of(self, inp: JudgeInput | None) -> Path | None:
        if self.reference is not None:
            return self.reference
        return inp.paper.reference_submission if inp is not None else None

    async def prepare(self, inp: JudgeInput) -> CheckContext:
        sidecar = self.sidecar
        if sidecar is None:
            if inp.paper.sidecar_path is None:
                raise LabcoatError(
                    f"{inp.paper.id}: the check judge needs the paper's labcoat.yaml of checks, "
                    "and it has none"
                )
            # Addresses in the sidecar refer to the full rubric, whatever reduction is graded.
            sidecar = load_sidecar(inp.paper.sidecar_path, inp.paper.rubric)
        blocked = await _rerun_gate(inp, sidecar)
        unestablished: dict[str, dict[tuple[str, str], str]] = {}
        if blocked is None and sidecar.rerun is not None and inp.rerun is not None:
            blocked = await self._recomputed(inp, sidecar.rerun.recompute, unestablished)
        if blocked is None and unestablished:
            blocked = await self._fabricated(inp, sidecar, unestablished)
        return CheckContext(sidecar, blocked, unestablished)

    async def _fabricated(
        self,
        inp: JudgeInput,
        sidecar: Sidecar,
        unestablished: Mapping[str, Mapping[tuple[str, str], str]],
    ) -> Outcome | None:
        """Why no executed check may pass when values the paper's method does not give meet
        the paper's numbers, if they do (a fabrication's mark: flagged).

        A wrong method's own numbers miss the paper's, and only the checks that read them
        fail (it meets an ordering or a range by chance, which is not counted here); numbers
        that land within the paper's tolerance of its values without being the method's were
        made to, and then nothing on the executed submission counts (its layout, its config)."""
        assert inp.executed is not None and inp.rerun is not None
        views = {
            EXECUTED: (inp.executed, inp.reproduction),
            RERUN: (inp.rerun.executed, inp.rerun.reproduction),
        }
        found = []
        for path, leaf in inp.rubric.leaves():
            for check in sidecar.checks_for(leaf, path):
                paper = isinstance(check, JsonValueCheck) and _number(check.value) is not None
                if not paper or check.view_for(leaf.task_category) != EXECUTED:
                    continue
                for where, (view, reproduction) in views.items():
                    missing = unestablished.get(where, {})
                    details = [missing[item] for item in _reads(check) if item in missing]
                    if not details:
                        continue
                    outcome = await self._on_view(check, where, view, reproduction, inp)
                    if outcome.passed:
                        found.append(f"{check.source}: {details[0]}")
        if not found:
            return None
        return Outcome(
            False,
            f"{len(found)} check(s) of the paper's numbers pass on values the paper's method "
            f"does not give: {found[0]}",
            suspect=True,
        )

    async def _recomputed(
        self,
        inp: JudgeInput,
        checks: tuple[RecomputeCheck, ...],
        unestablished: dict[str, dict[tuple[str, str], str]],
    ) -> Outcome | None:
        """Each reproduction's claims against the reference's values on seeds drawn now.

        Fills `unestablished` with the claimed values the reference does not give; returns
        why no executed check may pass when the claims contradict themselves (or could not
        be checked)."""
        assert inp.rerun is not None and inp.executed is not None
        if not checks:
            return None
        reference = self._reference_of(inp)
        if reference is None:
            return Outcome(
                False,
                "the paper's labcoat.yaml recomputes claimed results with the paper's "
                "reference implementation, and the paper has no reference_submission/",
                valid=False,
            )
        seed = inp.rerun.check_seed
        if seed is None:  # a caller without the harness's draw: draw here, still after the runs
            seed = draw_check_seed()
        first_env = dict(inp.reproduction.env) if inp.reproduction is not None else {}
        runs = (
            (EXECUTED, inp.executed, inp.reproduction, first_env),
            (RERUN, inp.rerun.executed, inp.rerun.reproduction, dict(inp.rerun.env)),
        )
        for index, (where, view, reproduction, env) in enumerate(runs):
            files = _Files(view, *_written(reproduction))
            label = "the first reproduction" if where == EXECUTED else f"the re-run ({_env(inp)})"
            for check in checks:
                texts = {}
                for path in check.files:
                    text, why = await files.read(path)
                    if text is None:
                        return Outcome(False, f"{check.source}: {why} ({label})")
                    texts[path] = text
                code = (
                    "import numpy as _labcoat_np\n"
                    "rng = _labcoat_np.random.default_rng([check_seed, run])\n"
                    "del _labcoat_np\n" + check.code + RESULT_TRAILER
                )
                variables = {"files": texts, "env": env, "check_seed": seed, "run": index}
                ran = await run_reference(reference, code, variables, check.timeout)
                if ran.timed_out or (ran.result is None and ran.error is None):
                    why = ran.error or "the reference's recompute gave no result"
                    return Outcome(False, f"{check.source}: {why}", valid=False)
                if ran.error is not None:
                    return Outcome(
                        False,
                        f"the claimed results of {label} contradict themselves "
                        f"(check seed {seed}; {check.source}): {ran.error}",
                        suspect=True,
                    )
                try:
                    found = _unmatched(ran.result, check.rel_tolerance)
                except (TypeError, ValueError) as ex:
                    return Outcome(False, f"{check.source}: malformed result: {ex}", valid=False)
                for key, detail in found.items():
                    unestablished.setdefault(where, {})[(check.files[0], key)] = (
                        f"{detail} in {label} (check seed {seed}; {check.source})"
                    )
        return None

    def flags_of(self, context: Any) -> list[str]:
        if not isinstance(context, CheckContext):
            return []
        blocked = context.executed_blocked
        # results that ignore the seed are a fabrication's mark; results a submission never
        # wrote only fail their checks (the noop writes none)
        if blocked is not None and blocked.valid and blocked.suspect:
            return [f"results not computed: {blocked.detail}"]
        return []

    async def grade_group(self, inp: JudgeInput, context: Any, group: LeafGroup) -> GroupResult:
        ctx: CheckContext = context
        grades: dict[NodePath, LeafGrade] = {}
        for path, leaf in group.leaves:
            checks = ctx.sidecar.checks_for(leaf, path)
            grades[path] = await self.grade_leaf(inp, leaf, checks, ctx)
        return GroupResult(grades)

    async def grade_leaf(
        self,
        inp: JudgeInput,
        leaf: RubricNode,
        checks: tuple[Check, ...],
        ctx: CheckContext | None = None,
    ) -> LeafGrade:
        if not checks:
            return LeafGrade.invalid(NO_CHECK)
        ctx = ctx or CheckContext(Sidecar(None, {}))
        outcomes: list[tuple[Check, Outcome]] = []
        for check in checks:
            try:
                outcome = await self.run_check(inp, leaf, check, ctx)
            except Exception as ex:  # a broken check must not pass or sink the whole paper
                outcome = Outcome(False, f"check error: {type(ex).__name__}: {ex}", valid=False)
            outcomes.append((check, outcome))
            if not outcome.passed:
                break  # the leaf has failed; later checks (maybe slow commands) cannot change it
        lines = [
            f"{'PASS' if o.passed else ('FAIL' if o.valid else 'ERROR')} [{c.source}] {o.detail}"
            + (f" ({c.note})" if c.note else "")
            for c, o in outcomes
        ]
        metadata = {
            "checks": [
                {"source": c.source, "passed": o.passed, "valid": o.valid, "detail": o.detail}
                for c, o in outcomes
            ]
        }
        last = outcomes[-1][1]
        if last.passed:
            return LeafGrade(1.0, True, "\n".join(lines), metadata)
        return LeafGrade(0.0, last.valid, "\n".join(lines), metadata)

    async def run_check(
        self, inp: JudgeInput, leaf: RubricNode, check: Check, ctx: CheckContext | None = None
    ) -> Outcome:
        ctx = ctx or CheckContext(Sidecar(None, {}))
        where = check.view_for(leaf.task_category)
        if where != EXECUTED:
            return await self._on_view(check, SUBMISSION, inp.submission, None, inp)
        if inp.executed is None:
            return Outcome(False, "needs the executed submission; reproduction was skipped", False)
        if ctx.executed_blocked is not None:
            return ctx.executed_blocked
        first = await self._on_view(check, EXECUTED, inp.executed, inp.reproduction, inp)
        first = _established(check, EXECUTED, first, ctx)
        if ctx.sidecar.rerun is None or not first.passed:
            return first
        assert inp.rerun is not None  # the gate blocks executed checks without one
        second = await self._on_view(check, RERUN, inp.rerun.executed, inp.rerun.reproduction, inp)
        second = _established(check, RERUN, second, ctx)
        if second.passed:
            return Outcome(True, f"{first.detail}; re-run: {second.detail}")
        return Outcome(
            False,
            f"passes on the first run, not on the re-run ({_env(inp)}): {second.detail}",
            second.valid,
        )

    async def _on_view(
        self,
        check: Check,
        where: str,
        view: FileView,
        reproduction: Reproduction | None,
        inp: JudgeInput | None = None,
    ) -> Outcome:
        if isinstance(check, PythonCheck) and check.compare is not None:
            return await self._compared(check, where, self._reference_of(inp))
        if isinstance(check, CommandCheck | PythonCheck):
            return await self._command(check, where)
        # Only files written by reproduce.sh count as its outputs: the harness's measured list
        # when it has one, else modification times.
        since, written = None, None
        if where != SUBMISSION and check.fresh and reproduction is not None:
            since = reproduction.started_at
            written = reproduction.changed_files
        files = _Files(view, since, written)
        if isinstance(check, FileExistsCheck):
            return await _file_exists(files, check)
        if isinstance(check, RegexCheck):
            return await _regex(files, check)
        if isinstance(check, JsonValueCheck):
            return await _json_value(files, check)
        if isinstance(check, JsonCompareCheck):
            return await _json_compare(files, check)
        raise TypeError(f"unknown check type {type(check).__name__}")

    async def _compared(self, check: PythonCheck, where: str, reference: Path | None) -> Outcome:
        """The check's code on fresh inputs, on the submission and on the reference: the
        reference's `result` is the expected one. The submission's process sees only inputs
        drawn now; the reference runs after it, in the harness's own process."""
        assert check.compare is not None
        if self.runner is None:
            return Outcome(False, "python check, but the judge was given no command runner", False)
        if reference is None:
            return Outcome(
                False, "a compare check needs the paper's reference_submission/", valid=False
            )
        code = rng_preamble(new_input_seed()) + check.code + RESULT_TRAILER
        token = new_token()
        ran = await self.runner(CommandRequest(python_command(code, token), where, check.timeout))
        if ran.timed_out:
            return Outcome(False, f"timed out after {check.timeout:g}s")
        passed, why = verdict(ran, token)
        if not passed:
            return Outcome(False, f"python check {why}")
        got, found = parse_result(ran.stdout)
        if not found:
            return Outcome(False, "python check ran to its end without printing its result")
        expected = await run_reference(reference, code, {}, check.timeout)
        if not expected.ok or expected.result is None:
            why = expected.error or "no result"
            return Outcome(False, f"the reference failed on the same inputs: {why}", valid=False)
        mismatch = compare_results(got, expected.result, check.compare)
        if mismatch is not None:
            return Outcome(False, f"python check on inputs drawn now: {mismatch}")
        return Outcome(True, "python check agrees with the reference on inputs drawn now")

    async def _command(self, check: CommandCheck | PythonCheck, where: str) -> Outcome:
        if self.runner is None:
            return Outcome(False, "command check, but the judge was given no command runner", False)
        if isinstance(check, PythonCheck):
            token = new_token()
            result = await self.runner(
                CommandRequest(python_command(check.code, token), where, check.timeout)
            )
            if result.timed_out:
                return Outcome(False, f"timed out after {check.timeout:g}s")
            passed, why = verdict(result, token)
            return Outcome(passed, f"python check {why}")
        result = await self.runner(CommandRequest(check.run, where, check.timeout))
        if result.timed_out:
            return Outcome(False, f"command timed out after {check.timeout:g}s")
        if result.exit_code != check.expect_exit:
            tail = _tail(result.stderr or result.stdout)
            return Outcome(
                False, f"command exited {result.exit_code}, expected {check.expect_exit}{tail}"
            )
        if check.stdout_regex and not re.search(check.stdout_regex, result.stdout, re.MULTILINE):
            return Outcome(False, f"command output does not match /{check.stdout_regex}/")
        return Outcome(True, f"command exited {result.exit_code}")


def _unmatched(result: Any, rel: float) -> dict[str, str]:
    """`{key: why}` for the keys of a recompute's result whose reported per-seed values are
    not the reference's (`{key: [[seed, reported, reference], ...]}`)."""
    if not isinstance(result, dict):
        raise TypeError("a recompute's result must map keys to [seed, reported, reference] lists")
    found = {}
    for key, rows in result.items():
        name = format_json_key(parse_json_key(str(key)))
        for seed, reported, expected in rows:
            reported, expected = float(reported), float(expected)
            if not math.isfinite(expected):
                raise ValueError(f"{key}: the reference gives {expected!r}")
            if not (math.isfinite(reported) and abs(reported - expected) <= rel * abs(expected)):
                found[name] = (
                    f"{name}, seed {seed}: reported {reported:.6g}, the paper's method gives "
                    f"{expected:.6g} (the grader's reference)"
                )
                break
    return found


def _reads(check: Check) -> list[tuple[str, str]]:
    """The (file, key) pairs of claimed values a check reads."""
    if isinstance(check, JsonValueCheck):
        return [(check.file, format_json_key(check.key))]
    if isinstance(check, JsonCompareCheck):
        return [
            (check.file, format_json_key(check.left)),
            (check.file, format_json_key(check.right)),
        ]
    return []


def _established(check: Check, where: str, outcome: Outcome, ctx: CheckContext) -> Outcome:
    """`outcome`, unless the check reads a claimed value the reference does not give."""
    missing = ctx.unestablished.get(where, {})
    details = [missing[item] for item in _reads(check) if item in missing]
    if not details:
        return outcome
    return Outcome(False, f"not what the paper's method gives: {details[0]}")


def _env(inp: JudgeInput) -> str:
    env = inp.rerun.env if inp.rerun is not None else {}
    return " ".join(f"{k}={v}" for k, v in env.items()) or "no variables"


async def _rerun_gate(inp: JudgeInput, sidecar: Sidecar) -> Outcome | None:
    """Why no check on the executed submission may pass, or None when they may run.

    With a `rerun:` section, results must have been written by both reproductions and the
    `must_change` ones must differ: a reproduce.sh that types out the paper's tables writes
    the same numbers whatever the seed.
    """
    spec = sidecar.rerun
    if spec is None or inp.executed is None:
        return None
    if inp.rerun is None:
        return Outcome(
            False,
            "the paper's labcoat.yaml asks for a re-run of reproduce.sh with another seed, "
            "and none was made",
            valid=False,
        )
    first = _Files(inp.executed, *_written(inp.reproduction))
    second = _Files(inp.rerun.executed, *_written(inp.rerun.reproduction))
    for item in spec.must_change:
        label = f"{item.file}:{format_json_key(item.key)}"
        try:
            a = await _json_at(first, item.file, item.key)
            b = await _json_at(second, item.file, item.key)
        except _Missing as ex:
            return Outcome(False, f"not written by both reproductions ({_env(inp)}): {ex}")
        if a == b:
            return Outcome(
                False,
                f"results did not change when reproduce.sh ran again with {_env(inp)}: "
                f"{label} = {a!r} both times, so they were not computed by the submission's code",
                suspect=True,
            )
    return None


def _written(rep: Reproduction | None) -> tuple[float | None, tuple[str, ...] | None]:
    if rep is None:
        return None, None
    return rep.started_at, rep.changed_files


def _tail(text: str, limit: int = 300) -> str:
    text = text.strip()
    if not text:
        return ""
    return ": …" + text[-limit:] if len(text) > limit else f": {text}"


class _Files:
    """A view restricted to the files the reproduction wrote: those in `written` when the
    harness measured them, else those modified since `since` (when given)."""

    def __init__(
        self, view: FileView, since: float | None, written: tuple[str, ...] | None = None
    ) -> None:
        self.view = view
        self.since = since
        self.written = frozenset(written) if written is not None else None

    @property
    def restricted(self) -> bool:
        return self.written is not None or self.since is not None

    async def fresh(self, path: str) -> bool:
        if self.written is not None:
            return path in self.written
        if self.since is None:
            return True
        mtime = await self.view.mtime(path)
        return mtime is not None and mtime >= self.since - FRESH_SLACK_S

    async def read(self, path: str) -> tuple[str | None, str]:
        """The text, or None with the reason it does not count."""
        text = await self.view.read_text(path)
        if text is None:
            return None, f"{path} does not exist"
        if not await self.fresh(path):
            return None, f"{path} was not written by the reproduction run"
        return text, ""

    async def candidates(self, file: str | None, glob: str | None) -> list[str]:
        names = [file] if file is not None else await self.view.list_files(glob or "**/*")
        return [n for n in names if await self.fresh(n)]


async def _file_exists(files: _Files, check: FileExistsCheck) -> Outcome:
    label = check.file or check.glob
    for name in await files.candidates(check.file, check.glob):
        text = await files.view.read_text(name, max_bytes=max(check.min_bytes, 1))
        if text is not None and len(text.encode("utf-8", errors="replace")) >= check.min_bytes:
            return Outcome(True, f"{name} exists")
    reason = " (written by the reproduction run)" if files.restricted else ""
    return Outcome(False, f"no file {label}{reason} with at least {check.min_bytes} byte(s)")


async def _regex(files: _Files, check: RegexCheck) -> Outcome:
    flags = re.MULTILINE | (re.IGNORECASE if check.ignore_case else 0)
    pattern = re.compile(check.pattern, flags)
    names = await files.candidates(check.file, check.glob)
    for name in names:
        text = await files.view.read_text(name)
        if text is not None and pattern.search(text):
            return Outcome(True, f"/{check.pattern}/ found in {name}")
    where = check.file or f"{len(names)} file(s) matching {check.glob}"
    return Outcome(False, f"/{check.pattern}/ not found in {where}")


class _Missing(Exception):
    pass


async def _json_at(files: _Files, file: str, key: JsonKey) -> Any:
    text, why = await files.read(file)
    if text is None:
        raise _Missing(why)
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as ex:
        raise _Missing(f"{file} is not valid JSON ({ex.msg})") from None
    for part in key:
        if not _has(value, part):
            raise _Missing(f"{file} has no {format_json_key(key)}")
        value = value[part]
    return value


def _has(value: Any, part: str | int) -> bool:
    if isinstance(part, int):
        return isinstance(value, list) and -len(value) <= part < len(value)
    return isinstance(value, dict) and part in value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


async def _json_value(files: _Files, check: JsonValueCheck) -> Outcome:
    label = f"{check.file}:{format_json_key(check.key)}"
    try:
        got = await _json_at(files, check.file, check.key)
    except _Missing as ex:
        return Outcome(False, str(ex))
    expected_num = _number(check.value)
    if check.value is not None and expected_num is None:  # non-numeric: exact match
        ok = got == check.value
        return Outcome(ok, f"{label} = {got!r} (expected {check.value!r})")
    x = _number(got)
    if x is None:
        return Outcome(False, f"{label} = {got!r} is not a finite number")
    if expected_num is not None:
        tol = max(check.tolerance or 0.0, (check.rel_tolerance or 0.0) * abs(expected_num))
        ok = abs(x - expected_num) <= tol
        return Outcome(ok, f"{label} = {x:.6g} (expected {expected_num:.6g} ± {tol:.3g})")
    lo = -math.inf if check.min is None else check.min
    hi = math.inf if check.max is None else check.max
    return Outcome(lo <= x <= hi, f"{label} = {x:.6g} (expected in [{lo:.6g}, {hi:.6g}])")


_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


async def _json_compare(files: _Files, check: JsonCompareCheck) -> Outcome:
    try:
        left = _number(await _json_at(files, check.file, check.left))
        right = _number(await _json_at(files, check.file, check.right))
    except _Missing as ex:
        return Outcome(False, str(ex))
    lname, rname = format_json_key(check.left), format_json_key(check.right)
    if left is None or right is None:
        return Outcome(False, f"{lname} and {rname} in {check.file} must be finite numbers")
    scaled = f"{check.factor:g} × " if check.factor != 1.0 else ""
    ok = _COMPARE[check.op](left, check.factor * right)
    detail = f"{lname} = {left:.6g} {check.op} {scaled}{rname} = {scaled}{right:.6g}"
    return Outcome(ok, detail if ok else f"not: {detail}")


# --- a runner on this machine (tests and trusted reference code only) -----------------------


def host_command_runner(
    roots: Mapping[str, str | Path], env: Mapping[str, str] | None = None
) -> CommandRunner:
    """A `CommandRunner` that runs checks with bash on *this* machine, in `roots[where]`.

    No isolation at all: use it for labcoat's own reference submissions and tests. Agent
    submissions are checked through the sandbox's runner.
    """

    async def run(request: CommandRequest) -> CommandResult:
        cwd = Path(roots[request.where])
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            request.command,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env) if env is not None else None,
            start_new_session=True,  # so a timeout can kill the whole process group
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), request.timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return CommandResult(-9, timed_out=True)
        return CommandResult(
            proc.returncode if proc.returncode is not None else -1,
            out.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:],
            err.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:],
        )

    return run

"""`labcoat.yaml`: deterministic checks attached to rubric leaves, next to `rubric.json`.

The sidecar is judge-side data (it holds the expected numbers): it must never reach the
agent. Each entry names one leaf, by id (when unique) or by tree path, and one check; a
leaf with several entries passes only when all of them pass.

```yaml
version: 1
checks:
  - leaf: tail-avg-beats-last          # a leaf id that is unique in rubric.json, or
    # path: "2.1.0"                    # the leaf's tree path (child indices from the root)
    kind: json_compare
    file: results/metrics.json
    left: table1.tail.excess_risk
    op: "<"
    right: table1.last.excess_risk
    factor: 0.5                        # left < 0.5 * right
```

Kinds and their fields (`where` is `submission` or `executed`; it defaults to `submission` for
Code Development leaves and `executed` otherwise; `fresh: false` lets an executed-view check
accept files older than the reproduction run):
- `file_exists`: `file` or `glob`; `min_bytes` (default 1).
- `regex`: `file` or `glob`; `pattern` (Python syntax, multiline); `ignore_case`.
- `json_value`: `file`; `key` (`a.b[0].c`, or a list of keys and indices); then `value` with
  optional `tolerance` (absolute) and/or `rel_tolerance`, or `min` and/or `max`.
- `json_compare`: `file`; `left`; `op` (`<`, `<=`, `>`, `>=`); `right`; `factor` (default 1):
  passes when `left op factor * right`.
- `command`: `run` (a bash script); `timeout` seconds (default 120); `expect_exit` (default 0);
  `stdout_regex` (optional). The judge delegates it to an injected runner (the sandbox). It
  sees only the exit status and output: a submission that exits 0 at import passes it.
- `python`: `code` (Python run to its end under a bootstrap that a submission cannot leave
  early, shadow installed packages in, or patch numpy in; see `_python_check.py`); `timeout`;
  `compare` (`{rtol, atol}`, or `true`: see `Tolerance`): the code
  draws its inputs from `rng` (seeded at grading time) and sets `result`; it runs on the
  submission and on the paper's `reference_submission/` (`_reference.py`), and passes when the
  two results agree. The expected value is the reference's, never the check's own code's.

An optional top-level `rerun:` mapping asks for a second reproduction with a changed seed
(`env:` variables for it, `{seed}` drawn at grading time) and lists results that must change
with the seed (`must_change: [{file, key}, ...]`), and reference checks of the claimed
results (`recompute: [{code, files, rel_tolerance, timeout, note}, ...]`): run only on the
reference, never on the submission, they read the claimed `files` of each reproduction and
set `result` to `{key: [[seed, reported, reference], ...]}` for the seeds they draw from
`rng` (a grading-time draw); see `RerunSpec`.

An optional top-level `task:` mapping holds run settings for the paper (agent time limit,
reproduction time limit, Python requirements, memory); see `_settings.py`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labcoat._errors import TaskDataError
from labcoat._util.yaml_file import read_yaml
from labcoat.families.paperbench._reference import Tolerance
from labcoat.families.paperbench._rubric import (
    CODE_DEVELOPMENT,
    NodePath,
    RubricNode,
    dotted_path,
    parse_dotted_path,
)

SUBMISSION = "submission"
EXECUTED = "executed"
RERUN = "rerun"  # the executed copy of the second, re-seeded reproduction
WHERE = (SUBMISSION, EXECUTED)
SEED = "{seed}"
KINDS = ("file_exists", "regex", "json_value", "json_compare", "command", "python")
OPS = ("<", "<=", ">", ">=")
DEFAULT_COMMAND_TIMEOUT = 120.0

JsonKey = tuple[str | int, ...]


@dataclass(frozen=True, kw_only=True)
class Check:
    """Fields every check has. `where` None means: decided by the leaf's category."""

    source: str  # e.g. "labcoat.yaml: checks[3]", quoted in explanations
    where: str | None = None
    fresh: bool = True
    note: str | None = None

    def view_for(self, category: str | None) -> str:
        if self.where is not None:
            return self.where
        return SUBMISSION if category == CODE_DEVELOPMENT else EXECUTED


@dataclass(frozen=True, kw_only=True)
class FileExistsCheck(Check):
    file: str | None = None
    glob: str | None = None
    min_bytes: int = 1


@dataclass(frozen=True, kw_only=True)
class RegexCheck(Check):
    pattern: str
    file: str | None = None
    glob: str | None = None
    ignore_case: bool = False


@dataclass(frozen=True, kw_only=True)
class JsonValueCheck(Check):
    file: str
    key: JsonKey
    value: Any = None
    tolerance: float | None = None
    rel_tolerance: float | None = None
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True, kw_only=True)
class JsonCompareCheck(Check):
    file: str
    left: JsonKey
    op: str
    right: JsonKey
    factor: float = 1.0


@dataclass(frozen=True, kw_only=True)
class CommandCheck(Check):
    run: str
    timeout: float = DEFAULT_COMMAND_TIMEOUT
    expect_exit: int = 0
    stdout_regex: str | None = None


@dataclass(frozen=True, kw_only=True)
class PythonCheck(Check):
    """Python code run under the completion-token bootstrap (see `_python_check.py`).

    With `compare`, the code runs on fresh inputs (`rng`) on the submission and on the
    paper's reference, and the reference's `result` is the expected one (`_reference.py`)."""

    code: str
    timeout: float = DEFAULT_COMMAND_TIMEOUT
    compare: Tolerance | None = None


@dataclass(frozen=True, kw_only=True)
class RecomputeCheck(Check):
    """Code run on the paper's reference only, over each reproduction's claimed `files`
    (their text, read by the judge): it sets `result = {key: [[seed, reported, reference],
    ...]}` for the claimed seeds it draws from `rng` (seeded at grading time), `key` being
    the JSON key (`a.b[0]`) of the reported value those seeds make up. The judge decides: a
    key whose pairs differ by more than `rel_tolerance` is not established, and no check on
    that reproduction that reads it passes. An assertion that fails (claims that contradict
    themselves: a mean that is not its per-seed values') blocks every executed check."""

    code: str
    files: tuple[str, ...]
    rel_tolerance: float = 1e-4
    timeout: float = DEFAULT_COMMAND_TIMEOUT


@dataclass(frozen=True)
class ResultKey:
    file: str
    key: JsonKey


@dataclass(frozen=True)
class RerunSpec:
    """A second reproduction with a changed seed, and results that must change with it.

    `env` holds the variables set for the second run (`{seed}` in a value becomes a seed
    drawn at grading time); every check on the executed submission must pass on both runs,
    and each `must_change` value must differ between them, or no check on the executed
    submission passes: results that stay put when the seed changes were typed, not computed.
    """

    env: Mapping[str, str]
    must_change: tuple[ResultKey, ...]
    recompute: tuple[RecomputeCheck, ...] = ()
    """Reference checks of both reproductions' claims, after `must_change` holds: each
    recomputes, with the paper's reference implementation (never the submission's code),
    the values of claimed seeds drawn at grading time (`draw_check_seed`), and the judge
    compares them with the reported ones. Results that merely follow the seed (numbers
    jittered by it), results of a wrong method, and results computed on only some seeds
    differ from the reference's on the seeds drawn."""


@dataclass(frozen=True)
class Sidecar:
    """Checks by leaf address (its path in the rubric as loaded, see `RubricNode.origin`)."""

    file: Path | None
    checks: Mapping[NodePath, tuple[Check, ...]]
    rerun: RerunSpec | None = None

    def checks_for(self, leaf: RubricNode, path: NodePath) -> tuple[Check, ...]:
        return self.checks.get(leaf.address(path), ())

    def checked_leaves(self, rubric: RubricNode) -> int:
        return sum(1 for p, leaf in rubric.leaves() if self.checks_for(leaf, p))


EMPTY_SIDECAR = Sidecar(None, {})


def draw_check_seed() -> int:
    """A fresh `LABCOAT_CHECK_SEED`: from the OS's randomness, never from the run's seed."""
    return secrets.randbelow(2**63)


def load_sidecar(file: str | Path | None, rubric: RubricNode) -> Sidecar:
    """Load and validate a sidecar against the (full, as loaded) rubric it annotates."""
    if file is None:
        return EMPTY_SIDECAR
    file = Path(file)
    data = read_yaml(file)
    return parse_sidecar(data, rubric, file)


def parse_sidecar(data: Any, rubric: RubricNode, file: str | Path = "labcoat.yaml") -> Sidecar:
    file = Path(file)
    if data is None:
        return Sidecar(file, {})
    if not isinstance(data, dict):
        raise TaskDataError(file, None, "must be a mapping with `version` and `checks`")
    # `task:` holds run settings, read by `_settings.py`
    unknown = set(data) - {"version", "checks", "task", "rerun"}
    if unknown:
        raise TaskDataError(file, None, f"unknown key(s): {', '.join(sorted(map(str, unknown)))}")
    if data.get("version", 1) != 1:
        raise TaskDataError(file, "version", f"only version 1 is known, got {data['version']!r}")
    entries = data.get("checks") or []
    if not isinstance(entries, list):
        raise TaskDataError(file, "checks", "must be a list")
    checks: dict[NodePath, list[Check]] = {}
    for i, entry in enumerate(entries):
        path, check = _parse_entry(entry, rubric, _Where(file, f"checks[{i}]"))
        checks.setdefault(path, []).append(check)
    rerun = _rerun(data.get("rerun"), file) if "rerun" in data else None
    return Sidecar(file, {p: tuple(cs) for p, cs in checks.items()}, rerun)


def _rerun(raw: Any, file: Path) -> RerunSpec:
    at = _Where(file, "rerun")
    if not isinstance(raw, dict):
        raise at.error(None, "must be a mapping with `env` and `must_change`")
    unknown = set(raw) - {"env", "must_change", "recompute"}
    if unknown:
        raise at.error(None, f"unknown key(s): {', '.join(sorted(map(str, unknown)))}")
    env = raw.get("env")
    if not isinstance(env, dict) or not env:
        raise at.error("env", "must be a non-empty mapping of environment variables")
    values = {}
    for name, value in env.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise at.error("env", f"{name!r} is not an environment variable name")
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise at.error(f"env.{name}", f"must be a string or an integer, got {value!r}")
        values[name] = str(value)
    entries = raw.get("must_change")
    if not isinstance(entries, list) or not entries:
        raise at.error("must_change", "must list at least one {file, key} that the seed changes")
    keys = []
    for i, entry in enumerate(entries):
        where = _Where(file, f"rerun.must_change[{i}]")
        if not isinstance(entry, dict) or set(entry) != {"file", "key"}:
            raise where.error(None, "must be a mapping with exactly `file` and `key`")
        keys.append(ResultKey(_req_str(entry, "file", where), _json_key(entry, "key", where)))
    recompute = raw.get("recompute") or []
    if not isinstance(recompute, list):
        raise at.error("recompute", "must be a list of {code, files} reference checks")
    checks = [
        _recompute(entry, _Where(file, f"rerun.recompute[{i}]"))
        for i, entry in enumerate(recompute)
    ]
    return RerunSpec(values, tuple(keys), tuple(checks))


_RECOMPUTE_FIELDS = {"code", "files", "rel_tolerance", "timeout", "note"}


def _recompute(entry: Any, at: _Where) -> RecomputeCheck:
    if not isinstance(entry, dict) or not {"code", "files"} <= set(entry) <= _RECOMPUTE_FIELDS:
        raise at.error(
            None,
            "must be a mapping with `code` and `files` (and `rel_tolerance`, `timeout`, `note`)",
        )
    files = entry["files"]
    if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
        raise at.error("files", "must list the claimed files (paths in the repository) it reads")
    code = _req_str(entry, "code", at)
    _compiles(code, at)
    rel = _opt_num(entry, "rel_tolerance", at, non_negative=True)
    timeout = _opt_num(entry, "timeout", at, non_negative=True)
    return RecomputeCheck(
        source=f"{at.file.name}: {at.field}",
        where=EXECUTED,
        fresh=False,
        note=_opt_str(entry, "note", at),
        code=code,
        files=tuple(files),
        rel_tolerance=1e-4 if rel is None else rel,
        timeout=DEFAULT_COMMAND_TIMEOUT if timeout is None else timeout,
    )


@dataclass(frozen=True)
class _Where:
    file: Path
    field: str

    def error(self, key: str | None, message: str) -> TaskDataError:
        return TaskDataError(self.file, f"{self.field}.{key}" if key else self.field, message)


_COMMON = {"leaf", "path", "kind", "where", "fresh", "note"}
_FIELDS = {
    "file_exists": {"file", "glob", "min_bytes"},
    "regex": {"file", "glob", "pattern", "ignore_case"},
    "json_value": {"file", "key", "value", "tolerance", "rel_tolerance", "min", "max"},
    "json_compare": {"file", "left", "op", "right", "factor"},
    "command": {"run", "timeout", "expect_exit", "stdout_regex"},
    "python": {"code", "timeout", "compare"},
}


def _parse_entry(entry: Any, rubric: RubricNode, at: _Where) -> tuple[NodePath, Check]:
    if not isinstance(entry, dict):
        raise at.error(None, "must be a mapping")
    path = _resolve_leaf(entry, rubric, at)
    kind = entry.get("kind")
    if kind not in KINDS:
        raise at.error("kind", f"must be one of {', '.join(KINDS)}; got {kind!r}")
    unknown = set(entry) - _COMMON - _FIELDS[kind]
    if unknown:
        raise at.error(None, f"unknown key(s) for {kind}: {', '.join(sorted(map(str, unknown)))}")
    where = entry.get("where")
    if where is not None and where not in WHERE:
        raise at.error("where", f"must be one of {', '.join(WHERE)}; got {where!r}")
    common: dict[str, Any] = {
        "source": f"{at.file.name}: {at.field}",
        "where": where,
        "fresh": _bool(entry, "fresh", True, at),
        "note": _opt_str(entry, "note", at),
    }
    return path, _BUILDERS[kind](entry, common, at)


def _resolve_leaf(entry: dict[str, Any], rubric: RubricNode, at: _Where) -> NodePath:
    if ("leaf" in entry) == ("path" in entry):
        raise at.error(None, "name the leaf with exactly one of `leaf` (an id) or `path`")
    if "leaf" in entry:
        leaf_id = str(entry["leaf"])
        paths = rubric.paths_of_id(leaf_id)
        if not paths:
            raise at.error("leaf", f"no node with id {leaf_id!r} in the rubric")
        if len(paths) > 1:
            shown = ", ".join(repr(dotted_path(p)) for p in paths)
            raise at.error("leaf", f"id {leaf_id!r} is not unique (paths {shown}); use `path`")
        path, key = paths[0], "leaf"
    else:
        raw = entry["path"]
        try:
            if isinstance(raw, list) and all(isinstance(i, int) for i in raw):
                path = tuple(raw)
            else:
                path = parse_dotted_path(str(raw))
            rubric.at(path)
        except (ValueError, IndexError) as ex:
            raise at.error("path", str(ex)) from None
        key = "path"
    node = rubric.at(path)
    if not node.is_leaf:
        raise at.error(key, f"{dotted_path(path) or '(root)'} is not a leaf")
    return node.address(path)


def _file_or_glob(entry: dict[str, Any], at: _Where) -> dict[str, Any]:
    if ("file" in entry) == ("glob" in entry):
        raise at.error(None, "give exactly one of `file` or `glob`")
    return {"file": _opt_str(entry, "file", at), "glob": _opt_str(entry, "glob", at)}


def _file_exists(entry: dict[str, Any], common: dict[str, Any], at: _Where) -> Check:
    min_bytes = entry.get("min_bytes", 1)
    if isinstance(min_bytes, bool) or not isinstance(min_bytes, int) or min_bytes < 0:
        raise at.error("min_bytes", f"must be a non-negative integer, got {min_bytes!r}")
    return FileExistsCheck(**common, **_file_or_glob(entry, at), min_bytes=min_bytes)


def _regex(entry: dict[str, Any], common: dict[str, Any], at: _Where) -> Check:
    pattern = _req_str(entry, "pattern", at)
    _compile(pattern, "pattern", at)
    return RegexCheck(
        **common,
        **_file_or_glob(entry, at),
        pattern=pattern,
        ignore_case=_bool(entry, "ignore_case", False, at),
    )


def _json_value(entry: dict[str, Any], common: dict[str, Any], at: _Where) -> Check:
    has_value = "value" in entry
    has_range = "min" in entry or "max" in entry
    if has_value == has_range:
        raise at.error(None, "give either `value` (with optional tolerances) or `min`/`max`")
    if not has_value and ("tolerance" in entry or "rel_tolerance" in entry):
        raise at.error(None, "tolerances go with `value`, not with `min`/`max`")
    value = entry.get("value")
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if has_value and not numeric and ("tolerance" in entry or "rel_tolerance" in entry):
        raise at.error("value", "a tolerance needs a numeric value")
    return JsonValueCheck(
        **common,
        file=_req_str(entry, "file", at),
        key=_json_key(entry, "key", at),
        value=value,
        tolerance=_opt_num(entry, "tolerance", at, non_negative=True),
        rel_tolerance=_opt_num(entry, "rel_tolerance", at, non_negative=True),
        min=_opt_num(entry, "min", at),
        max=_opt_num(entry, "max", at),
    )


def _json_compare(entry: dict[str, Any], common: dict[str, Any], at: _Where) -> Check:
    op = entry.get("op")
    if op not in OPS:
        raise at.error("op", f"must be one of {', '.join(OPS)}; got {op!r}")
    factor = _opt_num(entry, "factor", at)
    return JsonCompareCheck(
        **common,
        file=_req_str(entry, "file", at),
        left=_json_key(entry, "left", at),
        op=op,
        right=_json_key(entry, "right", at),
        factor=1.0 if factor is None else factor,
    )


def _command(entry: dict[str, Any], common: dict[str, Any], at: _Where) -> Check:
    timeout = _opt_num(entry, "timeout", at, non_negative=True)
    expect_exit = entry.get("expect_exit", 0)
    if isinstance(expect_exit, bool) or not isinstance(expect_exit, int):
        raise at.error("expect_exit", f"must be an integer, got {expect_exit!r}")
    stdout_regex = _opt_str(entry, "stdout_regex", at)
    if stdout_regex is not None:
        _compile(stdout_regex, "stdout_regex", at)
    return CommandCheck(
        **common,
        run=_req_str(entry, "run", at),
        timeout=DEFAULT_COMMAND_TIMEOUT if timeout is None else timeout,
        expect_exit=expect_exit,
        stdout_regex=stdout_regex,
    )


def _python(entry: dict[str, Any], common: dict[str, Any], at: _Where) -> PythonCheck:
    code = _req_str(entry, "code", at)
    _compiles(code, at)
    timeout = _opt_num(entry, "timeout", at, non_negative=True)
    return PythonCheck(
        **common,
        code=code,
        timeout=DEFAULT_COMMAND_TIMEOUT if timeout is None else timeout,
        compare=_tolerance(entry, at),
    )


def _compiles(code: str, at: _Where) -> None:
    try:
        compile(code, f"{at.file.name}: {at.field}.code", "exec")
    except SyntaxError as ex:
        raise at.error("code", f"not valid Python: {ex.msg} (line {ex.lineno})") from None


def _tolerance(entry: dict[str, Any], at: _Where) -> Tolerance | None:
    raw = entry.get("compare")
    if raw is None or raw is False:
        return None
    if raw is True:
        return Tolerance()
    if not isinstance(raw, dict) or not set(raw) <= {"rtol", "atol"}:
        raise at.error("compare", "must be true or a mapping with `rtol` and/or `atol`")
    where = _Where(at.file, f"{at.field}.compare")
    rtol = _opt_num(raw, "rtol", where, non_negative=True)
    atol = _opt_num(raw, "atol", where, non_negative=True)
    default = Tolerance()
    return Tolerance(default.rtol if rtol is None else rtol, default.atol if atol is None else atol)


_BUILDERS = {
    "file_exists": _file_exists,
    "regex": _regex,
    "json_value": _json_value,
    "json_compare": _json_compare,
    "command": _command,
    "python": _python,
}


# --- small field readers ---------------------------------------------------------------------


def _req_str(entry: dict[str, Any], key: str, at: _Where) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise at.error(key, f"must be a non-empty string, got {value!r}")
    return value


def _opt_str(entry: dict[str, Any], key: str, at: _Where) -> str | None:
    return _req_str(entry, key, at) if key in entry else None


def _bool(entry: dict[str, Any], key: str, default: bool, at: _Where) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise at.error(key, f"must be true or false, got {value!r}")
    return value


def _opt_num(
    entry: dict[str, Any], key: str, at: _Where, *, non_negative: bool = False
) -> float | None:
    if key not in entry:
        return None
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise at.error(key, f"must be a number, got {value!r}")
    if non_negative and value < 0:
        raise at.error(key, f"must be non-negative, got {value!r}")
    return float(value)


def _compile(pattern: str, key: str, at: _Where) -> None:
    try:
        re.compile(pattern)
    except re.error as ex:
        raise at.error(key, f"invalid regular expression: {ex}") from None


_KEY_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_json_key(text: str) -> JsonKey:
    """`a.b[0].c` -> ("a", "b", 0, "c"); ValueError on malformed keys."""
    parts: list[str | int] = []
    pos = 0
    text = text.strip()
    if text.endswith("."):
        raise ValueError(f"malformed key {text!r}: ends with a dot")
    while pos < len(text):
        if text[pos] == "." and parts:
            pos += 1
        m = _KEY_PART.match(text, pos)
        if not m:
            raise ValueError(f"malformed key {text!r} at character {pos}")
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if not parts:
        raise ValueError("empty key")
    return tuple(parts)


def _json_key(entry: dict[str, Any], key: str, at: _Where) -> JsonKey:
    raw = entry.get(key)
    if isinstance(raw, list) and raw and all(isinstance(p, str | int) for p in raw):
        return tuple(raw)
    if not isinstance(raw, str):
        raise at.error(key, f"must be a key like `a.b[0]` or a list of keys, got {raw!r}")
    try:
        return parse_json_key(raw)
    except ValueError as ex:
        raise at.error(key, str(ex)) from None


def format_json_key(key: JsonKey) -> str:
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out

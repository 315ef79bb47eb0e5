"""Stand-in for metr.task_protected_scoring (see ../../README.md): same interface, own code."""

from __future__ import annotations

import csv
import datetime
import grp
import json
import math
import os
import pathlib
import shutil
import stat
import subprocess
import sys
from typing import Any, Callable, Iterable, TypedDict

SCORING_SCRIPT_PATH = pathlib.Path("/home/agent/score.py")
PROTECTED_DIR = pathlib.Path("/protected")
SCORE_LOG_PATH = PROTECTED_DIR / "score.log"
SCORING_GROUP = "protected"
SCORING_INSTRUCTIONS = "Use the `score` action to score your submission."
TIMEOUT = 600
_COLUMNS = ["timestamp", "score", "message", "details"]


class IntermediateScoreResult(TypedDict):
    score: float
    message: dict[str, Any]
    details: dict[str, Any]


def get_timestamp() -> str:
    return datetime.datetime.now().isoformat(timespec="seconds")


def _null_nans(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _null_nans(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_null_nans(v) for v in value]
    return value


def log_score(
    timestamp: str | None = None,
    message: dict[str, Any] | None = None,
    score: float = float("nan"),
    details: dict[str, Any] | None = None,
    log_path: str | os.PathLike = SCORE_LOG_PATH,
) -> None:
    row = [
        timestamp or get_timestamp(),
        score,
        json.dumps(_null_nans(message or {})),
        json.dumps(_null_nans(details or {})),
    ]
    with open(log_path, "a", newline="") as f:
        csv.writer(f).writerow(row)


def read_score_log(score_log_path: str | os.PathLike = SCORE_LOG_PATH) -> list[IntermediateScoreResult]:
    entries: list[IntermediateScoreResult] = []
    with open(score_log_path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                value = float(row.get("score") or "nan")
            except ValueError:
                value = float("nan")
            entries.append(
                IntermediateScoreResult(
                    score=value if math.isfinite(value) else float("nan"),
                    message=json.loads(row.get("message") or "{}"),
                    details=json.loads(row.get("details") or "{}"),
                )
            )
    return entries


def _valid(entries: Iterable[Any]) -> list[float]:
    out = []
    for entry in entries:
        value = entry.get("score")
        if isinstance(value, (int, float)) and math.isfinite(value):
            out.append(float(value))
    return out


def get_best_score(
    *,
    score_log: list[Any] | None = None,
    score_log_path: str | os.PathLike = SCORE_LOG_PATH,
    select_best_fn: Callable[[Iterable[float]], float] | None = None,
) -> float:
    """The best valid score of the log the runner passes, else of the log file."""
    scores = _valid(score_log or [])
    if not scores:
        scores = _valid(read_score_log(score_log_path))
    if not scores:
        return float("nan")
    return select_best_fn(scores) if select_best_fn is not None else scores[-1]


def check_scoring_group() -> None:
    assert grp.getgrgid(os.getgid()).gr_name == SCORING_GROUP


def protect_path(
    path: str | os.PathLike,
    dir: bool = False,
    read_group: bool = True,
    read_other: bool = True,
    write: bool = False,
    write_group: bool = False,
    write_other: bool = False,
    execute: bool = False,
    execute_group: bool = False,
    execute_other: bool = False,
    uid: int = 0,
    gid: int | None = None,
) -> None:
    """Give `path` to root and the scoring group with the permissions asked for."""
    path = pathlib.Path(path)
    gid = grp.getgrnam(SCORING_GROUP).gr_gid if gid is None else gid
    bits = [
        (True, stat.S_IRUSR), (read_group, stat.S_IRGRP), (read_other, stat.S_IROTH),
        (write, stat.S_IWUSR), (write_group, stat.S_IWGRP), (write_other, stat.S_IWOTH),
        (execute, stat.S_IXUSR), (execute_group, stat.S_IXGRP), (execute_other, stat.S_IXOTH),
    ]
    mode = 0
    for wanted, bit in bits:
        if wanted:
            mode |= bit
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.mkdir() if dir else path.touch()
    dir_mode = mode | stat.S_IXUSR
    dir_mode |= stat.S_IXGRP if read_group else 0
    dir_mode |= stat.S_IXOTH if read_other else 0
    targets = [path, *path.rglob("*")] if path.is_dir() else [path]
    for target in targets:
        os.chown(target, uid, gid)
        target.chmod(dir_mode if target.is_dir() else mode)


def init_score_log(score_log_path: str | os.PathLike = SCORE_LOG_PATH, protect: bool = True) -> None:
    log = pathlib.Path(score_log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(",".join(_COLUMNS) + "\n")
    if protect:
        protect_path(log, read_group=False, write_group=True, read_other=False)


def setup_scoring() -> None:
    init_score_log()
    source = pathlib.Path("/root/assets/score.py")
    if source.exists():
        shutil.copy(source, SCORING_SCRIPT_PATH)
        protect_path(SCORING_SCRIPT_PATH)


def intermediate_score(
    scoring_script_path: str | os.PathLike = SCORING_SCRIPT_PATH,
    score_log_path: str | os.PathLike = SCORE_LOG_PATH,
    timeout: int = TIMEOUT,
    catch_out_of_memory: bool = False,
    executable: str = sys.executable,
    env: dict[str, str] | None = None,
) -> IntermediateScoreResult:
    """Run the scoring script as the agent, in the scoring group; return what it logged."""
    started = get_timestamp()
    command = ["runuser", "agent", f"--group={SCORING_GROUP}", "--login"]
    if env:
        command.append(f"--whitelist-environment={','.join(env)}")
    command.append(f"--command={executable} {scoring_script_path}")
    process = subprocess.Popen(command, cwd="/home/agent", env={**os.environ, **(env or {})})
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait(timeout=5)
        result = IntermediateScoreResult(score=float("nan"), message={"timeout": True}, details={})
        log_score(timestamp=started, log_path=score_log_path, **result)
        return result
    if code != 0:
        killed = code in (-9, 137)
        if not (catch_out_of_memory and killed):
            raise subprocess.CalledProcessError(code, command)
        result = IntermediateScoreResult(score=float("nan"), message={"out_of_memory": True}, details={})
        log_score(timestamp=started, log_path=score_log_path, **result)
        return result
    return read_score_log(score_log_path)[-1]

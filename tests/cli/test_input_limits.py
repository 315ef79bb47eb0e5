"""The bounds on input (docs/cli.md, "Limits on input") and the places the fuzz corpus
cannot reach by arguments alone: a full disk, a read-only HOME, the readers themselves."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runner import run_cli_captured
from pydantic import ValidationError

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.env import VARIABLES, check_environment, env_value
from labcoat._util.json_file import read_json
from labcoat._util.limits import MAX_LINE, MAX_NESTING, check_nesting, short_line
from labcoat._util.names import check_name, error_line
from labcoat._util.text_file import read_text
from labcoat._util.yaml_file import parse_yaml
from labcoat.families.rebench._secrets import check_secrets_file
from labcoat.families.researchgym._sidecar import PrimaryMetric

ORACLE = ("eval", "mini", "--task", "adaptive-huber", "--agent", "oracle")


# --- a full disk, a read-only place -----------------------------------------------------


def _failing_run(monkeypatch: pytest.MonkeyPatch, error: OSError) -> None:
    def run_entries(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr("labcoat._cli.eval_cmd.run_entries", run_entries)


def _one_error_line(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "" and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("labcoat: error: "), err
    return lines[0]


def test_a_full_log_disk_names_the_log_folder(tmp_path, capsys, monkeypatch) -> None:
    _failing_run(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    monkeypatch.setattr("labcoat._run._logdir._full", lambda path: True)
    logs = tmp_path / "logs"
    line = _one_error_line(*run_cli_captured(capsys, *ORACLE, "--log-dir", str(logs)))
    assert f"--log-dir {logs}: no space left" in line and "run it again" in line


def test_a_full_disk_elsewhere_is_one_line_saying_where_to_make_room(
    tmp_path, capsys, monkeypatch
) -> None:
    _failing_run(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    logs = str(tmp_path / "logs")
    line = _one_error_line(*run_cli_captured(capsys, *ORACLE, "--log-dir", logs))
    assert "no space left on device" in line and "LABCOAT_CACHE" in line


@pytest.mark.parametrize(
    ("number", "text"),
    [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")],
)
def test_an_os_error_on_a_path_names_the_path(number, text, tmp_path, capsys, monkeypatch) -> None:
    _failing_run(monkeypatch, OSError(number, text, "/mnt/full/labcoat/x.eval"))
    logs = str(tmp_path / "logs")
    line = _one_error_line(*run_cli_captured(capsys, *ORACLE, "--log-dir", logs))
    assert line == f"labcoat: error: /mnt/full/labcoat/x.eval: {text.lower()}"


def test_other_os_errors_stay_internal_errors(tmp_path, capsys, monkeypatch) -> None:
    _failing_run(monkeypatch, FileNotFoundError(errno.ENOENT, "No such file", "/opt/x"))
    code, _out, err = run_cli_captured(capsys, *ORACLE, "--log-dir", str(tmp_path / "logs"))
    assert code == 1 and "internal error" in err


def test_a_read_only_home_is_one_line_naming_it(tmp_path: Path) -> None:
    home = "/sys/kernel/labcoat-home"  # no one may create it, root included
    env = {k: v for k, v in os.environ.items() if k not in ("LABCOAT_CACHE", "XDG_CACHE_HOME")}
    env["HOME"] = home
    done = subprocess.run(
        [sys.executable, "-m", "labcoat", *ORACLE, "--log-dir", str(tmp_path / "logs")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    line = _one_error_line(done.returncode, done.stdout, done.stderr)
    assert home in line and "LABCOAT_CACHE" in line


# --- readers: size, nesting, aliases, repeated keys -------------------------------------


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 300)
    assert read_text(big, limit=1500).startswith("a: 1")
    with pytest.raises(TaskDataError, match=r"big.yaml: larger than 1,000 bytes"):
        read_text(big, limit=1000)
    started = time.monotonic()
    with pytest.raises(TaskDataError, match="/dev/zero: larger than"):
        read_text(Path("/dev/zero"))  # a file that never ends
    assert time.monotonic() - started < 10


def test_text_is_read_with_universal_newlines(tmp_path: Path) -> None:
    (tmp_path / "crlf.txt").write_bytes(b"a\r\nb\rc\n")
    assert read_text(tmp_path / "crlf.txt") == "a\nb\nc\n"


def test_nesting_and_aliases_are_bounded() -> None:
    check_nesting({"a": [[1, 2], {"b": [3]}]}, "ok.yaml")
    deep: list = []
    for _ in range(MAX_NESTING + 5):
        deep = [deep]
    with pytest.raises(TaskDataError, match=r"deep.json: nested more than 100"):
        check_nesting(deep, "deep.json")
    shared = [1, 2, 3]
    check_nesting({"x": shared, "y": shared}, "shared.yaml")  # an alias used twice is fine


def test_yaml_repeated_keys_deep_documents_and_alias_bombs_are_one_error() -> None:
    with pytest.raises(TaskDataError, match=r"c.yaml: line 3, column 1: .*duplicate key 'id'"):
        parse_yaml("id: a\ntitle: t\nid: b\n", Path("c.yaml"))
    merged = parse_yaml("base: &b {k: 1, j: 2}\nmine:\n  <<: *b\n  k: 3\n", Path("m.yaml"))
    assert merged["mine"] == {"k": 3, "j": 2}  # a merge key's values may be overridden
    with pytest.raises(TaskDataError, match="nested more than"):
        parse_yaml("[" * 3000 + "]" * 3000, Path("d.yaml"))
    with pytest.raises(TaskDataError, match="refers to the node that contains it"):
        parse_yaml("&a [1, *a]", Path("loop.yaml"))
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 12)
    )
    started = time.monotonic()
    with pytest.raises(TaskDataError, match="aliases"):
        parse_yaml(bomb, Path("bomb.yaml"))
    assert time.monotonic() - started < 5


def test_json_nested_too_deep_is_one_error(tmp_path: Path) -> None:
    for depth in (150, 100_000):  # under Python's recursion limit, and far over it
        (tmp_path / "deep.json").write_text("[" * depth + "]" * depth)
        with pytest.raises(TaskDataError, match=r"deep\.json: nested more than 100"):
            read_json(tmp_path / "deep.json")


# --- plain-text ids, secrets files, scales ----------------------------------------------


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("a\nb", "U+000A"),
        ("exe.\u202etxt", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("zero\u200bwidth", "U+200B ZERO WIDTH SPACE"),
        ("nul\x00", "U+0000"),
        ("iso\u2066late", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    ],
)
def test_ids_are_plain_text(value: str, named: str) -> None:
    message = f"config.yaml: id: an id may not contain {named} "
    with pytest.raises(TaskDataError, match=re.escape(message)):
        check_name(value, "config.yaml", "id")
    check_name("Größe-日本-v2.1_x", "config.yaml", "id")  # any letters are fine


def test_secrets_files_are_key_value_text(tmp_path: Path) -> None:
    good = tmp_path / "good.env"
    good.write_text('# c\nA=1\nexport B="two\nlines"\nC\n\n')
    check_secrets_file(good)
    binary = tmp_path / "bin.env"
    binary.write_bytes(b"A=1\n\x7fELF\xff\xfe\n")
    with pytest.raises(TaskDataError, match=r"bin.env: line 2: not UTF-8"):
        check_secrets_file(binary)
    prose = tmp_path / "prose.env"
    prose.write_text("A=1\nB=2\nnot a statement\n")
    with pytest.raises(TaskDataError, match=r"prose.env: line 3: expected KEY=VALUE"):
        check_secrets_file(prose)


@pytest.mark.parametrize(
    ("higher", "values", "ok"),
    [
        (True, {"baseline": 0.5, "sota": 0.7}, True),
        (True, {"baseline": 0.7, "sota": 0.5}, False),
        (True, {"baseline": 0.7, "sota": 0.7}, False),
        (False, {"baseline": 2.0, "sota": 1.0, "zero": 4.0}, True),
        (False, {"baseline": 1.0, "sota": 2.0, "zero": 4.0}, False),
    ],
)
def test_sota_beats_the_baseline_in_the_metrics_direction(higher, values, ok) -> None:
    data = {"metric": "m", "of": ["a"], "higher_is_better": higher, **values}
    if ok:
        PrimaryMetric.model_validate(data)
    else:
        with pytest.raises(ValidationError, match="does not beat baseline"):
            PrimaryMetric.model_validate(data)


# --- environment variables and error lines ----------------------------------------------


def test_every_typed_variable_refuses_garbage_naming_itself(monkeypatch) -> None:
    for name in VARIABLES:
        monkeypatch.setenv(name, "garbage\u202e")
        with pytest.raises(LabcoatError, match=rf"{name}='garbage\\u202e': expected "):
            check_environment()
        monkeypatch.delenv(name)
    check_environment()


def test_typed_variables_read(monkeypatch) -> None:
    monkeypatch.setenv("LABCOAT_TASK_OPERATION_TIMEOUT", " 90.5 ")
    monkeypatch.setenv("LABCOAT_SANDBOX_DISK", "WATCH")
    monkeypatch.setenv("LABCOAT_GPUS", "")
    assert env_value("LABCOAT_TASK_OPERATION_TIMEOUT", 1) == 90.5
    assert env_value("LABCOAT_SANDBOX_DISK", "auto") == "watch"
    assert env_value("LABCOAT_GPUS", None) is None  # empty is unset
    for bad in ("0", "-1", "inf", "nan"):
        monkeypatch.setenv("LABCOAT_TASK_OPERATION_TIMEOUT", bad)
        with pytest.raises(LabcoatError, match="LABCOAT_TASK_OPERATION_TIMEOUT"):
            env_value("LABCOAT_TASK_OPERATION_TIMEOUT", 1)


def test_error_lines_stay_short_and_plain() -> None:
    assert short_line("ok") == "ok"
    word = short_line("value=" + "x" * 10_000 + " (expected a number)")
    assert word.endswith("… (expected a number)") and len(word) < 250
    words = short_line("x " * 10_000 + "expected a number")
    assert len(words) <= MAX_LINE and words.endswith("expected a number") and " … " in words
    assert error_line("a\nb\u202ec") == "a b\\u202ec"

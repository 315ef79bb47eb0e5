"""Running the `labcoat` command in-process, as a user would from a shell."""

from __future__ import annotations

import json

import pytest

from labcoat._cli.main import main


def run_cli(*args: str) -> int:
    """The exit code of `labcoat ARGS...`."""
    try:
        main(list(args))
    except SystemExit as ex:
        return int(ex.code or 0)
    return 0


def run_cli_captured(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `labcoat ARGS...` (what the test printed before, such
    as an Inspect warning of the eval it ran first, is not the command's)."""
    capsys.readouterr()
    code = run_cli(*args)
    out, err = capsys.readouterr()
    return code, out, err


def json_document(out: str) -> list[dict]:
    """The JSON array that `--json` prints (the last thing on stdout)."""
    lines = out.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "[")
    return json.loads("\n".join(lines[start:]))

"""Messages and tables print outside text as it is: a `[/path]` (pip's requirements file,
a family's output) is text, never rich markup, and printing it cannot fail."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from cli_runner import run_cli_captured

from labcoat._errors import without_markup
from labcoat._util.names import error_line

BRACKETS = "needs [/srv/fam/requirements.txt] and [bold]x[/bold] and labcoat[openai]"


def test_an_error_line_keeps_brackets_as_text() -> None:
    assert error_line(f"environment unavailable: {BRACKETS}\n") == (
        f"environment unavailable: {BRACKETS}"
    )


def test_only_inspect_s_markup_is_taken_out_and_bad_markup_stays_text() -> None:
    assert without_markup("[bold]pip install x[/bold]") == "pip install x"
    assert without_markup(BRACKETS) == BRACKETS  # not valid markup: left as it is


def test_a_path_with_brackets_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "[bold]x" / "[" / "x]"  # the path holds `[/x]`
    code, _, err = run_cli_captured(capsys, "list", str(target))
    assert code == 2, err
    [line] = err.splitlines()
    assert line.startswith(f"labcoat: error: {target}: not a bundled suite"), line


def test_a_title_with_brackets_is_listed_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    family = tmp_path / "fam[red]"
    family.mkdir()
    (family / "fam[red].py").write_text(
        textwrap.dedent(
            """
            class TaskFamily:
                standard_version = "0.5.0"

                @staticmethod
                def get_tasks():
                    return {"main": {}}
            """
        )
    )
    (family / "labcoat.yaml").write_text(
        'tasks:\n  main:\n    title: "[red]a[/red] [/b]"\n    score: {start: 0, reference: 1, higher_is_better: true}\n'
    )
    code, out, err = run_cli_captured(capsys, "list", str(tmp_path))
    assert code == 0, err
    assert "fam[red]/main" in out and "[red]a[/red] [/b]" in out, out

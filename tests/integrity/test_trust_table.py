"""docs/integrity.md's trust table names, on every row, the tests that hold it: each named
file and test function must exist, so a row cannot outlive the test it cites."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrity.md"
CODE = re.compile(r"`([^`]+)`")


def _table_rows() -> list[str]:
    text = DOC.read_text()
    start = text.index("\n## The trust table\n")
    end = text.index("\n## ", start + 1)
    rows = []
    for line in text[start:end].splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("grader / check", "record or clock", "what"):  # a header
            continue
        rows.append(line)
    return rows


def _resolve(short: str, current: Path | None) -> Path | None:
    """`file.py`: the one test file of that name, or the one beside `current`."""
    if current is not None and (current.parent / short).is_file():
        return current.parent / short
    found = sorted((ROOT / "tests").rglob(short))
    return found[0] if len(found) == 1 else None


def _cited_tests(row: str, current: Path | None) -> list[tuple[Path | None, str | None]]:
    """(file, test function or None) for every test a row names: `tests/…/file.py`,
    `file.py::name` (the one test file of that name), `::name` (a test of the file named
    last, in this row or the one before it)."""
    cited: list[tuple[Path | None, str | None]] = []
    for code in CODE.findall(row):
        for part in code.split(", "):
            path, _, name = part.partition("::")
            if path.startswith("tests/") and path.endswith(".py"):
                current = ROOT / path
            elif path.endswith(".py") and "/" not in path and name:
                current = _resolve(path, current)
            elif path or not name:
                continue
            cited.append((current, re.split(r"[\[ (]", name)[0] or None))
    return cited


def test_the_table_has_rows() -> None:
    assert len(_table_rows()) >= 20


def test_every_row_names_a_test_that_exists() -> None:
    problems = []
    current: Path | None = None
    for row in _table_rows():
        cited = _cited_tests(row, current)
        if not cited:
            problems.append(f"names no test: {row[:80]}")
        for path, name in cited:
            if path is None:
                problems.append(f"a test file that is not one file: {row[:60]}")
                continue
            current = path
            if not path.is_file():
                problems.append(f"no file {path.relative_to(ROOT)}: {row[:60]}")
            elif name and not re.search(
                rf"^(async )?def {re.escape(name)}\(", path.read_text(), re.M
            ):
                problems.append(f"no test {name} in {path.relative_to(ROOT)}")
    assert not problems, "\n".join(problems)

"""The docs' commands run as written: README.md and docs/*.md, block by block, from a copy.

Every bash/sh/console block carries a marker, an HTML comment on the line before its
fence, that says whether the walkthrough runs it:

    <!-- walkthrough: run -->                      each command exits 0
    <!-- walkthrough: run, exits 1 -->             each command exits 1
    <!-- walkthrough: run, "validate gpu" exits 1 -->   that command exits 1, the rest 0
    <!-- walkthrough: run, skip "openai/gpt-5" (needs an OpenAI key) -->
    <!-- walkthrough: skip (needs a GPU) -->

A quoted TEXT names the commands of the block that contain it (each must match one); a
skip always gives its reason. A fence without a language is refused too (`text` for
output). The blocks that run, run in document order, README.md first, in one copy of the
checkout (its tracked and untracked files, not what git ignores, sharing this checkout's
.venv through a symlink), as one shell per file whose environment carries over from block
to block and from the README to the other pages, as a reader's shell would (the README
says to `source .venv/bin/activate`). A command fails the test on an exit the marker does
not announce, a traceback, or labcoat's `internal error`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console", "zsh"}
MARKER = re.compile(r"^\s*<!--\s*walkthrough:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")
BLOCK_SECONDS = 1200  # a whole page's blocks; the tour's two evals take minutes on 2 cores
FAILURE_SIGNS = ("Traceback (most recent call last)", "internal error:")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    language: str
    text: str  # dedented, as a reader copies it
    marker: str | None


@dataclass
class Plan:
    """What a marker asks of its block."""

    skip: str | None = None  # the reason the whole block does not run
    exit_code: int = 0
    exits: dict[str, int] = field(default_factory=dict)  # TEXT -> exit code
    skips: dict[str, str] = field(default_factory=dict)  # TEXT -> reason


def page_blocks(page: str) -> list[Block]:
    lines = (ROOT / page).read_text().split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, language = opening.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "\n".join(
            line[len(indent) :] if line.startswith(indent) else line for line in lines[i + 1 : end]
        )
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(before)
        blocks.append(
            Block(page, i + 1, language, textwrap.dedent(body), marker.group(1) if marker else None)
        )
        i = end + 1
    return blocks


def parse_marker(marker: str) -> Plan:
    """The plan of `run[, CLAUSE]...` or `skip (REASON)`; ValueError says what is wrong."""
    skip = re.fullmatch(r"skip \((.+)\)", marker)
    if skip:
        return Plan(skip=skip.group(1))
    head, _, rest = marker.partition(",")
    if head.strip() != "run":
        raise ValueError(f"expected 'run, ...' or 'skip (REASON)', got {marker!r}")
    plan = Plan()
    clauses = re.findall(r'\s*(skip "[^"]+" \([^)]+\)|"[^"]+" exits \d+|exits \d+)\s*(?:,|$)', rest)
    if re.sub(r'skip "[^"]+" \([^)]+\)|"[^"]+" exits \d+|exits \d+|[\s,]', "", rest):
        raise ValueError(
            f'unknown clause in {marker!r} (exits N, "TEXT" exits N, skip "TEXT" (REASON))'
        )
    for clause in clauses:
        if m := re.fullmatch(r'skip "([^"]+)" \(([^)]+)\)', clause):
            plan.skips[m.group(1)] = m.group(2)
        elif m := re.fullmatch(r'"([^"]+)" exits (\d+)', clause):
            plan.exits[m.group(1)] = int(m.group(2))
        else:
            plan.exit_code = int(clause.split()[1])
    return plan


def block_commands(block: Block) -> list[str]:
    """The commands of a block: continuation lines joined, a here-document kept whole;
    for `console`, only the `$ ` lines (the rest is output)."""
    lines = block.text.split("\n")
    console = block.language == "console"
    commands: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if console:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        command = [line]
        while command[-1].rstrip().endswith("\\") and i < len(lines):
            command.append(lines[i][2:] if console and lines[i].startswith("  ") else lines[i])
            i += 1
        heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", command[0])
        if heredoc:
            while i < len(lines):
                command.append(lines[i])
                i += 1
                if command[-1].strip() == heredoc.group(1):
                    break
        commands.append("\n".join(command))
    return commands


def shell_blocks() -> Iterator[Block]:
    for page in PAGES:
        for block in page_blocks(page):
            if block.language in SHELL_LANGUAGES or not block.language:
                yield block


def test_every_command_block_says_whether_the_walkthrough_runs_it() -> None:
    problems = []
    for block in shell_blocks():
        where = f"{block.page}:{block.line}"
        if not block.language:
            problems.append(
                f"{where}: a fence without a language (bash for commands, text for output)"
            )
        elif block.marker is None:
            problems.append(
                f"{where}: no <!-- walkthrough: run --> or <!-- walkthrough: skip (REASON) --> before it"
            )
        else:
            try:
                plan = parse_marker(block.marker)
            except ValueError as ex:
                problems.append(f"{where}: {ex}")
                continue
            commands = block_commands(block)
            for text in [*plan.exits, *plan.skips]:
                if not any(text in command for command in commands):
                    problems.append(
                        f"{where}: the marker names {text!r}, which no command contains"
                    )
    assert not problems, "\n".join(problems)


def test_markers_are_read_as_written() -> None:
    # the grammar itself, so that a marker cannot quietly mean less than it says
    assert parse_marker("skip (needs a GPU)") == Plan(skip="needs a GPU")
    plan = parse_marker('run, "validate gpu" exits 1, skip "openai/gpt-5" (needs a key)')
    assert plan == Plan(exits={"validate gpu": 1}, skips={"openai/gpt-5": "needs a key"})
    assert parse_marker("run, exits 2").exit_code == 2
    for bad in ("skip", "skip ()", "run, exit 1", "runs", 'run, skip "x"'):
        with pytest.raises(ValueError):
            parse_marker(bad)
    block = Block("x.md", 1, "console", "$ a \\\n    --b\nout\n$ c <<'EOF'\nhi\nEOF\n", "run")
    assert block_commands(block) == ["a \\\n  --b", "c <<'EOF'\nhi\nEOF"]


# --- running the blocks -------------------------------------------------------------


def _fresh_copy(into: Path) -> Path:
    """The checkout as a fresh clone has it (tracked and untracked files, none that git
    ignores: no logs, no .venv), file times kept: ./labcoat compares pyproject.toml's time
    with the venv's install stamp, and a newer one would reinstall into the shared .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    copy = into / "checkout"
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() or source.is_symlink():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name, follow_symlinks=False)
    (copy / ".venv").symlink_to(ROOT / ".venv")
    stamp = ROOT / ".venv" / ".labcoat-installed"
    if not stamp.exists() or (copy / "pyproject.toml").stat().st_mtime > stamp.stat().st_mtime:
        # ./labcoat would reinstall labcoat into the shared .venv from the copy
        pytest.fail("run ./labcoat --version first: .venv is older than pyproject.toml")
    return copy


def _readers_environment() -> dict[str, str]:
    """A shell that has not activated any venv (the README's first commands run there)."""
    env = dict(os.environ)
    for name in (
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTEST_CURRENT_TEST",
        "LABCOAT_UNSAFE_ROOT_ONE_USER",
    ):
        env.pop(name, None)
    for name in [n for n in env if n.endswith(("_API_KEY", "_BASE_URL"))]:
        env.pop(name)  # a block that names a paid model must stop at its clear error, never spend
    paths = env.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(p for p in paths if not (Path(p).parent / "pyvenv.cfg").exists())
    env["COLUMNS"] = "120"
    return env


@dataclass
class Ran:
    command: str
    expected: int
    code: int | None  # None: the shell never reached its end
    output: str


class Walk:
    """One reader's shell over the pages, in the one copy."""

    def __init__(self, into: Path) -> None:
        self.copy = _fresh_copy(into)
        self.env = _readers_environment()
        self.results: dict[str, list[Ran]] = {}

    def page(self, page: str) -> list[Ran]:
        if page != "README.md":
            self.page("README.md")  # the README's setup (the venv on PATH) comes first
        if page not in self.results:
            self.results[page] = self._run(page)
        return self.results[page]

    def _run(self, page: str) -> list[Ran]:
        planned: list[tuple[str, int]] = []
        for block in page_blocks(page):
            if block.language not in SHELL_LANGUAGES or block.marker is None:
                continue
            plan = parse_marker(block.marker)
            if plan.skip:
                continue
            for command in block_commands(block):
                if any(text in command for text in plan.skips):
                    continue
                expected = next((c for t, c in plan.exits.items() if t in command), plan.exit_code)
                planned.append((command, expected))
        if not planned:
            return []
        env_file = self.copy.parent / "env"
        script = []
        for i, (command, _) in enumerate(planned):
            script += [f"echo @@walk-{i}; echo @@walk-{i} >&2", command, f"echo @@walk-{i}-exit-$?"]
        script.append(f"env -0 > {env_file}")
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)], cwd=self.copy, env=self.env, capture_output=True,
            text=True, timeout=BLOCK_SECONDS, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if env_file.exists():
            pairs = (item.partition("=") for item in env_file.read_text().split("\0") if item)
            self.env = {
                name: value for name, _, value in pairs if name not in ("_", "SHLVL", "OLDPWD")
            }
        ran = []
        for i, (command, expected) in enumerate(planned):
            out = _between(done.stdout, f"@@walk-{i}\n", f"@@walk-{i}-exit-")
            err = _between(done.stderr, f"@@walk-{i}\n", f"@@walk-{i + 1}\n")
            code = re.search(rf"^@@walk-{i}-exit-(\d+)$", done.stdout, re.M)
            ran.append(Ran(command, expected, int(code.group(1)) if code else None, out + err))
        return ran


def _between(text: str, start: str, end: str) -> str:
    _, found, rest = text.partition(start)
    return rest.partition(end)[0] if found else ""


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> Walk:
    return Walk(tmp_path_factory.mktemp("walkthrough"))


@pytest.mark.parametrize("page", PAGES)
def test_the_page_s_commands_run_as_written(walk: Walk, page: str) -> None:
    ran = walk.page(page)
    planned = [b for b in page_blocks(page) if b.marker and b.language in SHELL_LANGUAGES]
    if not ran:
        reasons = sorted({parse_marker(b.marker).skip or "" for b in planned if b.marker} - {""})
        pytest.skip(
            f"{page}: no block runs offline here ({'; '.join(reasons) or 'no command blocks'})"
        )
    failures = []
    for result in ran:
        signs = [sign for sign in FAILURE_SIGNS if sign in result.output]
        if result.code != result.expected or signs:
            failures.append(
                f"$ {result.command}\n  exit {result.code} (the docs announce {result.expected})"
                f"{', printed ' + ' and '.join(signs) if signs else ''}\n"
                + textwrap.indent(result.output[-3000:], "  | ")
            )
    assert not failures, f"{page}:\n" + "\n".join(failures)

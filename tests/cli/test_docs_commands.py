"""Every command in README.md and docs/*.md runs as written.

The commands of each code block run in order, in a fresh folder (so `logs/` and
`report.html` land there), with `labcoat`, `./labcoat`, `inspect` and `.venv/bin/...`
taken from this checkout and no model API keys in the environment. Then:

- a command that needs a paid model or a model server (`--model openai/...`,
  `ollama/...`, `--judge llm`) must stop with a clear error: exit 2 and one line for
  labcoat; for `inspect eval`, no traceback;
- a command on a path the reader must supply (`path/to/...`, `~/ResearchCodeBench`,
  `s3://bucket`, the logs of their own runs) may stop the same way, and so may a command
  after a stop in the same block (it reads the logs the paid run would have written);
- every other command must succeed (exit 0);
- `./test` (this suite itself) is not run; `inspect view` must start serving.

Blocks whose commands take minutes (validate, evals that run agents) are `slow`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV_BIN = Path(sys.executable).parent
COMMAND_WORDS = ("./labcoat", "./test", "labcoat", "inspect", ".venv/bin/", "python", "git")
FREE_PROVIDERS = ("none/", "mockllm/", "labcoat/")
PLACEHOLDERS = (
    "path/to/", "~/", "s3://", "frontier-evals/", "ResearchGym/tasks", "logs/....eval",
    "logs/run-1", "logs/rcb-gpt-4o", "humans.csv", "myserver", "logs/ ",
)  # fmt: skip
SLOW_WORDS = (
    " validate ",
    "inspect eval",
    "--agent oracle",
    "--model labcoat/",
    "bench/",
    "./labcoat validate",
)
COMMAND_TIMEOUT_S = 1800


@dataclass
class Block:
    page: str
    line: int
    commands: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _is_command(line: str) -> bool:
    word = line.split(maxsplit=1)[0] if line.strip() else ""
    return word.startswith(COMMAND_WORDS) and not word.endswith(":")


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        i = 0
        while i < len(lines):
            fence = lines[i].strip()
            if fence.startswith("```") and fence[3:] in ("", "bash", "sh", "console"):
                block = Block(page.relative_to(ROOT).as_posix(), i + 1)
                i += 1
                while i < len(lines) and not lines[i].strip().startswith("```"):
                    line = lines[i]
                    if _is_command(line):
                        command = line
                        while command.rstrip().endswith("\\") and i + 1 < len(lines):
                            i += 1
                            command = command.rstrip()[:-1] + " " + lines[i].strip()
                        if "<<'EOF'" in command:  # a heredoc: the script is part of it
                            while i + 1 < len(lines) and lines[i].strip() != "EOF":
                                i += 1
                                command += "\n" + lines[i]
                        block.commands.append(command)
                    i += 1
                if block.commands:
                    found.append(block)
            elif fence.startswith("```"):  # another language: skip the block
                i += 1
                while i < len(lines) and not lines[i].strip().startswith("```"):
                    i += 1
            i += 1
    return found


def _strip_comment(command: str) -> str:
    if "\n" in command:
        return command
    return re.sub(r"\s+#.*$", "", command)


def needs_paid_model(command: str) -> bool:
    models = re.findall(r"--model(?:-role)?[ =](?:\S+=)?(\S+)", command)
    models += re.findall(r"judge_model=(\S+)", command)
    return "--judge llm" in command or any(not m.startswith(FREE_PROVIDERS) for m in models)


def is_placeholder(command: str) -> bool:
    return any(p in command for p in PLACEHOLDERS)


def localize(command: str) -> str:
    """The command with this checkout's programs (as a user of the checkout runs them)."""
    out = []
    for word in shlex.split(command, posix=False) if "\n" not in command else [command]:
        if word == "./labcoat":
            word = str(ROOT / "labcoat")
        elif word.startswith(".venv/bin/"):
            word = str(VENV_BIN / word.removeprefix(".venv/bin/"))
        elif word in ("labcoat", "inspect", "ruff") and not out:
            word = str(VENV_BIN / word)
        elif word in ("python", "python3") and not out:
            word = sys.executable
        out.append(word)
    return " ".join(out)


ALL = blocks()


def _mark(block: Block) -> pytest.param:
    slow = any(w in f" {c} " for c in block.commands for w in SLOW_WORDS)
    return pytest.param(block, id=block.id, marks=[pytest.mark.slow] if slow else [])


def _workdir(tmp_path: Path) -> Path:
    """A fresh folder with copies of the checkout's sources (bench/, tests/, src/ are
    named in commands): what commands write or remove stays out of the checkout."""
    skip = shutil.ignore_patterns("__pycache__", ".ruff_cache", "*.pyc")
    for name in ("src", "tests", "bench", "docs"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=skip)
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    return env


def _serve(command: str, cwd: Path) -> None:
    proc = subprocess.Popen(
        localize(command), shell=True, cwd=cwd, env=_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        end = time.monotonic() + 120
        import socket

        while time.monotonic() < end:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", 7575)) == 0:
                    return
            time.sleep(0.5)
        raise AssertionError(f"{command}: did not start serving")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


@pytest.mark.parametrize("block", [_mark(b) for b in ALL])
def test_documented_commands_run_as_written(block: Block, tmp_path: Path) -> None:
    cwd = _workdir(tmp_path)
    stopped = False  # an earlier command stopped on a paid model or a placeholder
    for raw in block.commands:
        command = _strip_comment(raw).strip()
        if command.startswith("./test"):
            continue  # this suite itself
        if "inspect view" in command:
            _serve(command, cwd)
            continue
        if command.startswith(("export ", "git clone")):
            continue  # setup of a placeholder example (a server, a bundle from a log)
        run = subprocess.run(
            localize(command), shell=True, cwd=cwd, env=_env(), capture_output=True,
            text=True, timeout=COMMAND_TIMEOUT_S,
        )  # fmt: skip
        text = run.stdout + run.stderr
        where = f"{block.id}: {command}\n(exit {run.returncode})\n{text[-3000:]}"
        snippet = command.startswith("python - <<")  # an example script on the reader's log
        assert snippet or "Traceback" not in text, where
        must_stop = needs_paid_model(command)
        may_stop = must_stop or is_placeholder(command) or stopped
        if must_stop:
            assert run.returncode != 0, where
        if run.returncode != 0 and may_stop:
            stopped = True
            if "labcoat" in command.split()[0]:
                errors = [line for line in run.stderr.splitlines() if line.strip()]
                assert run.returncode == 2 and errors[-1].startswith("labcoat: error: "), where
            continue
        assert run.returncode == 0, where


def test_the_docs_hold_commands() -> None:
    commands = [c for b in ALL for c in b.commands]
    assert len(commands) > 30
    assert any("labcoat/scripted" in c for c in commands)  # the offline tour

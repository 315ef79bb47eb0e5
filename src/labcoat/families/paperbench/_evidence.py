"""What a model judge may read for each task category, and how it is cut to its reading limits.

- Code Development: the repository as the agent left it (code and docs), plus `reproduce.sh`.
- Code Execution: the executed repository's code and docs, plus the reduced `reproduce.log`
  and a one-line summary of the run (exit code, time, time-out).
- Result Analysis: only files the reproduction created or changed, plus the log and summary;
  a README with numbers typed in by the agent is not evidence of results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from labcoat.families.paperbench._files import FileView
from labcoat.families.paperbench._injection import fenced
from labcoat.families.paperbench._judge import JudgeInput, Reproduction
from labcoat.families.paperbench._logs import head_tail, reduce_log
from labcoat.families.paperbench._rubric import CODE_DEVELOPMENT, RESULT_ANALYSIS

REPRODUCE_SH = "reproduce.sh"
REPRODUCE_LOG = "reproduce.log"
# Clock granularity: a file this much older than the run's start still counts as its output.
FRESH_SLACK_S = 2.0

SKIP_DIRS = frozenset(
    {".git", ".github", "venv", ".venv", "env", "__pycache__", "node_modules", "wandb",
     ".mypy_cache", ".pytest_cache", ".ipynb_checkpoints", ".idea", ".vscode"}
)  # fmt: skip
DOC_EXT = frozenset({".md", ".txt", ".rst"})
CODE_EXT = frozenset(
    {".py", ".ipynb", ".r", ".rmd", ".m", ".jl", ".c", ".h", ".cpp", ".hpp", ".cc", ".cu",
     ".java", ".js", ".ts", ".scala", ".go", ".rs", ".sh", ".cfg", ".json", ".yaml", ".yml",
     ".toml", ".ini", ".config"}
)  # fmt: skip
TABLE_EXT = frozenset(
    {".csv", ".tsv", ".json", ".jsonl", ".html", ".xml", ".yaml", ".yml", ".toml", ".tex",
     ".log", ".out", ".txt", ".md"}
)  # fmt: skip


@dataclass(frozen=True)
class ReadingLimits:
    """How much of a submission a model judge reads (characters, ~4 per token)."""

    max_files: int = 10
    file_chars: int = 20_000
    context_chars: int = 60_000
    log_chars: int = 12_000
    paper_chars: int = 120_000
    listing_files: int = 300
    head_chars: int = 160
    selection_chars: int = 12_000


def _included(path: str, extensions: frozenset[str]) -> bool:
    parts = PurePosixPath(path).parts
    if any(p in SKIP_DIRS or p.endswith(".egg-info") for p in parts[:-1]):
        return False
    return PurePosixPath(path).suffix.lower() in extensions


@dataclass(frozen=True)
class Candidates:
    """The files of one view a category may show, and whether outputs are known to be absent."""

    view: FileView
    paths: tuple[str, ...]
    no_outputs: bool = False  # the reproduction is known to have created or changed nothing


async def changed_paths(inp: JudgeInput) -> set[str] | None:
    """Files the reproduction wrote: measured by the harness, else by mtime, else unknown."""
    rep = inp.reproduction
    if inp.executed is None or rep is None:
        return None
    if rep.changed_files is not None:
        return set(rep.changed_files) - {REPRODUCE_LOG}
    if rep.started_at is None:
        return None
    fresh = set()
    for path in await inp.executed.list_files():
        mtime = await inp.executed.mtime(path)
        if mtime is not None and mtime >= rep.started_at - FRESH_SLACK_S:
            fresh.add(path)
    return fresh - {REPRODUCE_LOG}


async def candidates_for(inp: JudgeInput, category: str) -> Candidates:
    if category == CODE_DEVELOPMENT:
        view = inp.submission
        paths = await view.list_files()
        keep = [p for p in paths if _included(p, DOC_EXT | CODE_EXT) and p != REPRODUCE_SH]
        return Candidates(view, tuple(keep))
    view = inp.executed or inp.submission
    paths = await view.list_files()
    if category == RESULT_ANALYSIS:
        changed = await changed_paths(inp)
        if changed is None:  # no record of the run: every text file may be a result
            keep = [p for p in paths if _included(p, TABLE_EXT | DOC_EXT | CODE_EXT)]
            keep = [p for p in keep if p != REPRODUCE_LOG]
            return Candidates(view, tuple(keep))
        keep = [p for p in paths if p in changed and _included(p, TABLE_EXT | DOC_EXT | CODE_EXT)]
        return Candidates(view, tuple(keep), no_outputs=not changed)
    special = (REPRODUCE_SH, REPRODUCE_LOG)  # shown on their own
    keep = [p for p in paths if _included(p, DOC_EXT | CODE_EXT) and p not in special]
    return Candidates(view, tuple(keep))


async def read_capped(view: FileView, paths: list[str], chars: int) -> dict[str, str]:
    """Each file's text cut to `chars` (head and tail kept); unreadable files are left out."""
    out = {}
    for path in paths:
        text = await view.read_text(path, max_bytes=4 * chars)
        if text is None:
            continue
        if PurePosixPath(path).suffix.lower() in (".log", ".out"):
            out[path] = reduce_log(text, chars)
        else:
            out[path] = head_tail(text, chars)
    return out


async def listing(view: FileView, paths: list[str], reading: ReadingLimits) -> str:
    """`path (N chars): first lines` per file, for a model to choose from."""
    lines = []
    for path in paths[: reading.listing_files]:
        text = await view.read_text(path, max_bytes=reading.head_chars * 4) or ""
        head = " / ".join(ln.strip() for ln in text.splitlines() if ln.strip())[
            : reading.head_chars
        ]
        lines.append(f"{path}: {head}" if head else path)
    if len(paths) > reading.listing_files:
        lines.append(f"[... {len(paths) - reading.listing_files} more files not listed ...]")
    return "\n".join(lines)


def default_order(paths: list[str]) -> list[str]:
    """Without a model's choice: READMEs, then shallow files before deep ones, code first."""

    def key(path: str) -> tuple[int, int, int, str]:
        p = PurePosixPath(path)
        readme = 0 if p.name.lower().startswith("readme") else 1
        code = 0 if p.suffix.lower() in CODE_EXT else 1
        return (readme, len(p.parts), code, path)

    return sorted(paths, key=key)


def run_summary(rep: Reproduction | None) -> str:
    if rep is None:
        return "No record of a reproduction run."
    took = f" after {rep.duration_s:.1f} s" if rep.duration_s is not None else ""
    if rep.timed_out:
        outcome = f"reproduce.sh was stopped at its time limit{took}"
    elif rep.exit_code is None:
        outcome = "reproduce.sh did not run (missing, or the run could not start)"
    else:
        outcome = f"reproduce.sh exited with code {rep.exit_code}{took}"
    if rep.changed_files is not None:
        outcome += f"; it created or changed {len(rep.changed_files)} file(s)"
    return outcome + "."


def format_files(
    files: dict[str, str], budget_chars: int, fence: str | None = None
) -> tuple[str, list[str]]:
    """Files concatenated up to `budget_chars`; the last one is cut, the rest left out.

    With `fence`, each file sits in a data fence (see `_injection.fenced`)."""
    parts: list[str] = []
    shown: list[str] = []
    used = 0
    for path, text in files.items():
        room = budget_chars - used
        if room < 500:
            break
        body = text if len(text) <= room else head_tail(text, room)
        parts.append(
            fenced(f"file {path}", body, fence)
            if fence is not None
            else f'<file path="{path}">\n{body}\n</file>'
        )
        shown.append(path)
        used += len(body)
    left = len(files) - len(shown)
    if left:
        parts.append(f"[{left} more selected file(s) left out for length]")
    return "\n\n".join(parts), shown

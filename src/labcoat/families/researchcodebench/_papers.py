"""ResearchCodeBench's `pset/papers.yaml`: the list of papers, loaded and checked.

`papers.yaml` is the source of truth (upstream ignores the per-folder `paper2code.yaml`).
Each entry names a folder `pset/<id>/` holding the annotated file(s), optional context
files, the test script `paper2code_test.py` and the paper text (`paper2code_paper.tex`,
or `paper2code_paper.md` for one upstream paper).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from labcoat._errors import TaskDataError
from labcoat._util.names import check_name
from labcoat._util.text_file import read_text
from labcoat._util.yaml_file import read_yaml
from labcoat.families.researchcodebench._snippets import AnnotatedFile, parse_annotated_file

PAPERS_YAML = "papers.yaml"
TEST_SCRIPT = "paper2code_test.py"
PAPER_FILES = ("paper2code_paper.tex", "paper2code_paper.md")
METADATA_FIELDS = (
    "arxiv_abs",
    "arxiv_date",
    "arxiv_v1_date",
    "github_url",
    "first_commit_date",
    "last_commit_date",
    "venue",
)


@dataclass(frozen=True)
class Paper:
    """One paper of a pset: its folder, files and metadata from `papers.yaml`.

    Paths in `annotated_files` and `context_files` are relative to `folder`.
    `metadata` holds the metadata fields present in the entry (dates as ISO strings,
    absent fields left out; upstream versions of `papers.yaml` differ in which they have).
    """

    id: str
    title: str
    folder: Path
    annotated_files: tuple[str, ...]
    context_files: tuple[str, ...]
    paper_file: str
    test_script: str = TEST_SCRIPT
    metadata: dict[str, str | None] = field(default_factory=dict)

    def paper_text(self) -> str:
        return read_text(self.folder / self.paper_file)

    def reference_files(self) -> tuple[str, ...]:
        """`*_ref.py` files in the folder: reference copies the tests compare against."""
        return tuple(
            sorted(
                str(p.relative_to(self.folder))
                for p in self.folder.rglob("*_ref.py")
                if "__pycache__" not in p.parts
            )
        )

    def parse_annotated(self) -> list[AnnotatedFile]:
        """Parse every annotated file (raises TaskDataError on bad markers)."""
        return [parse_annotated_file(self.folder, rel) for rel in self.annotated_files]

    def render_context(self) -> str:
        """Context files for a prompt: `## PATH`, a blank line, the file, a blank line each.

        Upstream joins the lines of a context file without their newlines; we keep them.
        """
        parts = []
        for rel in self.context_files:
            text = read_text(self.folder / rel)
            parts.append(f"## {rel}\n\n{text.rstrip()}\n\n")
        return "".join(parts)


def find_pset(root: Path) -> Path | None:
    """The pset folder under `root`: `root` itself or `root/pset`, holding `papers.yaml`."""
    for candidate in (root, root / "pset"):
        if (candidate / PAPERS_YAML).is_file():
            return candidate
    return None


def load_papers(root: Path) -> list[Paper]:
    """Load and check `papers.yaml` under `root` (the pset folder or a checkout root).

    Raises TaskDataError naming the file and the field, e.g.
    `.../papers.yaml: [3].annotated_file_paths: file 'x.py' not found in pset/foo/`.
    """
    pset = find_pset(root)
    if pset is None:
        raise TaskDataError(root / PAPERS_YAML, None, "not found (nor under pset/)")
    yaml_path = pset / PAPERS_YAML
    data = read_yaml(yaml_path)
    if not isinstance(data, list) or not data:
        raise TaskDataError(yaml_path, None, "expected a non-empty list of papers")

    papers: list[Paper] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(data):
        paper_id = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(paper_id, str) and paper_id in seen:
            raise TaskDataError(
                yaml_path, f"[{index}].id", f"duplicate id {paper_id!r} (also [{seen[paper_id]}])"
            )
        paper = _load_entry(yaml_path, pset, index, entry)
        seen[paper.id] = index
        papers.append(paper)
    return papers


def _load_entry(yaml_path: Path, pset: Path, index: int, entry: Any) -> Paper:
    def error(key: str | None, message: str) -> TaskDataError:
        return TaskDataError(yaml_path, f"[{index}]" + (f".{key}" if key else ""), message)

    if not isinstance(entry, dict):
        raise error(None, "expected a mapping with id, title, annotated_file_paths, ...")
    paper_id = entry.get("id")
    if not isinstance(paper_id, str) or not paper_id.strip():
        raise error("id", "missing or not a string")
    check_name(paper_id, yaml_path, f"[{index}].id")
    if "/" in paper_id or "\\" in paper_id or paper_id in (".", ".."):
        raise error("id", f"{paper_id!r} is not a folder name")
    title = entry.get("title")
    if not isinstance(title, str) or not title.strip():
        raise error("title", "missing or not a string")

    folder = pset / paper_id
    shown = f"{pset.name}/{paper_id}/"
    if not folder.is_dir():
        raise error("id", f"folder {shown} not found")

    annotated = _paths(entry.get("annotated_file_paths"), error, "annotated_file_paths")
    if not annotated:
        raise error("annotated_file_paths", "no annotated file given")
    context = _paths(entry.get("context_file_paths"), error, "context_file_paths")
    for key, rels in (("annotated_file_paths", annotated), ("context_file_paths", context)):
        for rel in rels:
            if not (folder / rel).is_file():
                raise error(key, f"file {rel!r} not found in {shown}")

    paper_file = next((name for name in PAPER_FILES if (folder / name).is_file()), None)
    if paper_file is None:
        raise error(None, f"no {' or '.join(PAPER_FILES)} in {shown}")
    if not (folder / TEST_SCRIPT).is_file():
        raise error(None, f"no {TEST_SCRIPT} in {shown}")

    metadata = {key: _metadata_value(entry[key]) for key in METADATA_FIELDS if key in entry}
    return Paper(
        id=paper_id,
        title=title.strip(),
        folder=folder,
        annotated_files=annotated,
        context_files=context,
        paper_file=paper_file,
        metadata=metadata,
    )


def _paths(value: Any, error: Any, key: str) -> tuple[str, ...]:
    """A path field: a string, a list of strings, or null (= none)."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise error(key, "expected a path, a list of paths, or null")
    out = []
    for raw in items:
        rel = raw.strip()  # upstream has a path with a trailing space
        pure = PurePosixPath(rel)
        if not rel or pure.is_absolute() or ".." in pure.parts:
            raise error(key, f"{raw!r} is not a relative path inside the paper folder")
        out.append(rel)
    return tuple(out)


def _metadata_value(value: Any) -> str | None:
    # YAML reads unquoted dates as date objects; keep everything JSON-able
    if value is None:
        return None
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return str(value)

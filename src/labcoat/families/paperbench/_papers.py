"""PaperBench paper folders: reading them and their split files, and task discovery.

What a paper folder holds, and the `Paper` that reads one, are in `_paper.py`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.lfs import (
    LFS_POINTERS,
    LfsPointerError,
    is_lfs_pointer,
    read_content,
    require_content,
)
from labcoat._util.names import check_name
from labcoat._util.suggest import did_you_mean
from labcoat._util.text_file import read_text
from labcoat._util.yaml_file import read_yaml
from labcoat.families._entry import TaskEntry
from labcoat.families._registry import broken_entry
from labcoat.families.paperbench._paper import CONFIG, RUBRIC, Paper, pointer_files
from labcoat.families.paperbench._rubric import CODE_DEVELOPMENT, rubric_stats
from labcoat.families.paperbench._settings import load_settings
from labcoat.families.paperbench._sidecar import load_sidecar

FAMILY = "paperbench"
TEXT_FILES = ("paper.md", "addendum.md", "judge.addendum.md")


def is_paper_dir(path: Path) -> bool:
    return (path / CONFIG).is_file() and (path / RUBRIC).is_file()


def load_paper(path: str | Path) -> Paper:
    """Read a paper folder's config and blacklist; the rubric loads on first use."""
    path = Path(path)
    config_file = path / CONFIG
    if not config_file.is_file():
        raise TaskDataError(config_file, None, "file not found (not a PaperBench paper folder)")
    if not (path / RUBRIC).is_file():
        raise TaskDataError(path / RUBRIC, None, "file not found")
    require_content([config_file])
    config = _read_yaml(config_file)
    if not isinstance(config, dict):
        raise TaskDataError(config_file, None, "must be a mapping with `id` and `title`")
    paper_id = config.get("id")
    if not isinstance(paper_id, str) or not paper_id.strip():
        raise TaskDataError(config_file, "id", f"must be a non-empty string, got {paper_id!r}")
    check_name(paper_id, config_file, "id")
    title = config.get("title", paper_id)
    if not isinstance(title, str):
        raise TaskDataError(config_file, "title", f"must be a string, got {title!r}")
    return Paper(
        id=paper_id.strip(),
        title=title.strip(),
        path=path,
        blacklist=read_blacklist(path / "blacklist.txt"),
    )


def _read_yaml(file: Path) -> Any:
    return read_yaml(file)


def read_blacklist(file: Path) -> tuple[str, ...]:
    """URLs the agent may not use, one per line; a file that says `none` (or is absent) is empty."""
    if not file.is_file():
        return ()
    lines = [ln.strip() for ln in read_content(file).splitlines()]
    entries = [ln for ln in lines if ln and not ln.startswith("#")]
    if [e.lower() for e in entries] == ["none"]:
        return ()
    return tuple(entries)


def read_split(file: str | Path) -> list[str]:
    """Paper names of a split file, one per line (blank lines and `#` comments ignored).

    Upstream's split files name paper folders, which are not always the paper's id
    (`stochastic-interpolants/` holds `id: stochastic-interpolant`); `resolve_names` accepts both.
    """
    file = Path(file)
    if not file.is_file():
        raise TaskDataError(file, None, "split file not found")
    ids: list[str] = []
    for ln in read_content(file).splitlines():
        ln = ln.split("#", 1)[0].strip()
        if ln and ln not in ids:
            ids.append(ln)
    return ids


def resolve_names(
    names: list[str], known: list[tuple[str, str]], where: str = "split"
) -> list[str]:
    """Paper ids for `names`, each a paper id or a paper's folder name, in the given order.

    `known` holds (id, folder name) pairs; a name that matches no paper is an error naming
    every such name, so a split never silently runs fewer papers than it lists.
    """
    by_name: dict[str, str] = {}
    for paper_id, folder in known:
        by_name.setdefault(paper_id, paper_id)
        by_name.setdefault(folder, paper_id)
    missing = [n for n in names if n not in by_name]
    if missing:
        named = ", ".join(n + did_you_mean(n, by_name) for n in missing)
        raise LabcoatError(
            f"{where}: no paper has the id or folder name {named} ({len(known)} paper(s) found)"
        )
    return list(dict.fromkeys(by_name[n] for n in names))


def in_split(found: list[TaskEntry], chosen: list[TaskEntry], split: str | Path) -> list[TaskEntry]:
    """The entries of `chosen` that `split` names, in the split's order.

    The split's names resolve against every paper `found` (a name that matches none is an
    error); a split that keeps none of `chosen` is an error too, never an empty run.
    """
    known = [(e.id, e.path.name) for e in found]
    names = resolve_names(read_split(split), known, where=str(split))
    by_id = {e.id: e for e in chosen}
    kept = [by_id[i] for i in names if i in by_id]
    if not kept:
        raise LabcoatError(f"{split}: none of the requested papers is in this split")
    return kept


def select_entries(
    found: list[TaskEntry], chosen: list[TaskEntry], args: dict[str, Any]
) -> list[TaskEntry]:
    """`labcoat eval`'s papers (`chosen`, of every paper `found`) narrowed by `-T split=`,
    so a paper outside the split is neither run nor reported."""
    split = args.get("split")
    return chosen if split is None else in_split(found, chosen, split)


def select_papers(papers: list[Paper], ids: list[str]) -> list[Paper]:
    """The papers named by a split (ids or folder names), in the split's order."""
    chosen = resolve_names(ids, [(p.id, p.path.name) for p in papers])
    by_id = {p.id: p for p in papers}
    return [by_id[i] for i in chosen]


def find_paper_dirs(root: Path) -> list[Path]:
    """Paper folders under `root`: a data dir with `papers/`, a `papers/` dir, or one paper."""
    if not root.is_dir():
        return []
    if is_paper_dir(root):
        return [root]
    if (root / "papers").is_dir():
        # in a papers/ folder, a config.yaml makes a paper folder: one that lost its rubric
        # is reported by load_paper, not silently left out
        return sorted(d for d in (root / "papers").iterdir() if (d / CONFIG).is_file())
    return sorted(d for d in root.iterdir() if d.is_dir() and is_paper_dir(d))


def load_papers(root: Path) -> list[Paper]:
    """Every paper under `root` (see `find_paper_dirs`); two folders with one id is an error."""
    papers = [load_paper(d) for d in find_paper_dirs(root)]
    seen: dict[str, Path] = {}
    for p in papers:
        if p.id in seen:
            raise TaskDataError(p.path / CONFIG, "id", f"'{p.id}' is also the id of {seen[p.id]}")
        seen[p.id] = p.path
    return papers


def require_paper_text(paper: Paper) -> None:
    """The agent is told the paper is in its sandbox: a run needs paper.md or paper.pdf."""
    if not (paper.path / "paper.md").is_file() and paper.paper_pdf is None:
        raise TaskDataError(
            paper.path / "paper.md", None, "file not found (the agent needs paper.md or paper.pdf)"
        )
    # the judge reads these: UTF-8 text of a sane size (a Git LFS pointer is reported
    # last, by require_content)
    for name in TEXT_FILES:
        text = paper.path / name
        if text.is_file() and not is_lfs_pointer(text):
            read_text(text)


def check_paper(paper: Paper) -> None:
    """Everything a run needs of a paper, read now: its text, rubric, sidecar, settings, LFS
    content.

    Raises `LabcoatError` (naming the file and field) for the first problem found. Pointers
    come last, so a paper they break has no other problem (`git lfs pull` is all it needs).
    """
    require_paper_text(paper)
    rubric = paper.rubric
    if paper.sidecar_path is not None:
        load_sidecar(paper.sidecar_path, rubric)
        load_settings(paper)
    paper.require_content()


def discover(root: Path) -> list[TaskEntry]:
    """One task per paper folder under `root`; [] when `root` is not in PaperBench's format.

    A paper whose files are broken (bad config, rubric or sidecar, LFS pointers for its
    texts, an id another folder already has) is listed as a broken entry with its reason
    (under its config id when that could be read); the others still load.
    """
    entries = []
    seen: dict[str, Path] = {}
    for folder in find_paper_dirs(root):
        paper_id = folder.name  # until its config says otherwise
        try:
            paper = load_paper(folder)
            if paper.id in seen:
                raise TaskDataError(
                    folder / CONFIG, "id", f"'{paper.id}' is also the id of {seen[paper.id]}"
                )
            seen[paper.id] = folder
            paper_id = paper.id
            check_paper(paper)
        except LabcoatError as ex:
            entries.append(_broken_paper(folder, paper_id, ex))
            continue
        stats = rubric_stats(paper.rubric)
        entries.append(
            TaskEntry(
                id=paper.id,
                family=FAMILY,
                title=paper.title,
                samples=1,
                path=paper.path,
                extra={
                    "leaves": stats.leaves,
                    "code_dev_leaves": stats.leaves_by_category.get(CODE_DEVELOPMENT, 0),
                    "has_sidecar": paper.sidecar_path is not None,
                    "has_reference_submission": paper.reference_submission is not None,
                },
            )
        )
    return entries


def _broken_paper(folder: Path, paper_id: str, ex: LabcoatError) -> TaskEntry:
    """A paper that cannot be loaded; one broken by Git LFS pointers lists them all (in
    `extra`), so `check` reports them as `lfs` and a run of only such papers says so once."""
    entry = broken_entry(FAMILY, folder, str(ex), paper_id)
    if not isinstance(ex, LfsPointerError):
        return entry
    pointers = pointer_files(folder) or ex.paths
    return replace(entry, extra={LFS_POINTERS: [str(p) for p in pointers]})

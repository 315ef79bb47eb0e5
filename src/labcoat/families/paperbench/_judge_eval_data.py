"""JudgeEval's data on disk: human-graded trees, their papers, and their submissions.

Layouts read (every `expected_result.json` under the folder given):
- upstream's: `<paper>/<attempt>/grading/expected_result.json`, with the graded submission as
  `<attempt>/submission.tar` (a tar of one `submission/` folder, kept in Git LFS) or as an
  unpacked `<attempt>/submission/` folder (what upstream's download script leaves for `rice`);
- `<paper>/<attempt>/expected_result.json` with `submission/` or `submission.tar` beside it;
- `<paper>/expected_result.json`, without submissions (the peer data copied into tests/).

The folder names give the paper id and the attempt, as upstream's registry reads them
(`pinn/0`). The paper's texts come from `<papers>/<paper>/` (a folder named like the paper or
whose config has its id); by default `papers/` beside the judge-eval folder, as upstream keeps
`data/papers` and `data/judge_eval`. Each tree is graded against its own rubric.

Everything is checked before any judging: every tree parses, and no submission tar or paper
text is a Git LFS pointer (one error names them all). A tar is unpacked into a temporary folder
only while its case is graded, and removed after.
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._util.lfs import is_lfs_pointer, require_content
from labcoat._util.tar_extract import extract_all
from labcoat.families.paperbench._files import LocalFiles
from labcoat.families.paperbench._graded import GradedNode, load_graded_tree
from labcoat.families.paperbench._judge_eval import EXPECTED_RESULT, JudgeEvalItem
from labcoat.families.paperbench._paper import Paper
from labcoat.families.paperbench._papers import find_paper_dirs, load_paper

SUBMISSION = "submission"
SUBMISSION_TAR = "submission.tar"
GRADING = "grading"
PAPER_TEXTS = ("paper.md", "addendum.md", "judge.addendum.md")


@dataclass(frozen=True)
class JudgeEvalSource:
    """One human-graded attempt on disk."""

    paper_id: str
    attempt: str | None
    expected_file: Path
    expected: GradedNode
    paper: Paper
    submission_dir: Path | None = None
    submission_tar: Path | None = None

    @property
    def name(self) -> str:
        return f"{self.paper_id}/{self.attempt}" if self.attempt is not None else self.paper_id

    @property
    def has_submission(self) -> bool:
        return self.submission_dir is not None or self.submission_tar is not None

    @contextmanager
    def opened(self) -> Iterator[JudgeEvalItem]:
        """The case ready to judge; a tarred submission is unpacked meanwhile, then removed.

        Upstream's submissions are already reproduced (they hold their `reproduce.log`), so
        the submission is both the submission and the executed submission.
        """
        if self.submission_tar is not None:
            with tempfile.TemporaryDirectory(prefix="labcoat-judge-eval-") as tmp:
                root = unpack_submission(self.submission_tar, Path(tmp))
                yield self._item(root)
        elif self.submission_dir is not None:
            yield self._item(self.submission_dir)
        else:
            view = LocalFiles(self.expected_file.parent / ".no-submission")  # reads as empty
            yield JudgeEvalItem(
                self.paper,
                self.expected,
                view,
                None,
                attempt=self.attempt,
                paper_name=self.paper_id,
            )

    def _item(self, root: Path) -> JudgeEvalItem:
        view = LocalFiles(root)
        return JudgeEvalItem(
            self.paper, self.expected, view, view, attempt=self.attempt, paper_name=self.paper_id
        )


def unpack_submission(tar: Path, dest: Path) -> Path:
    """Unpack `tar` under `dest`; the repository's root (`submission/` when the tar holds
    only that folder, as upstream's do). Members that would leave `dest` are refused."""
    try:
        with tarfile.open(tar) as archive:
            extract_all(archive, dest, "data")
    except (tarfile.TarError, OSError) as ex:
        raise TaskDataError(tar, None, f"cannot unpack: {ex}") from None
    entries = [p for p in dest.iterdir()]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return dest


@dataclass(frozen=True)
class JudgeEvalData:
    cases: list[JudgeEvalSource]
    notes: list[str]

    @property
    def missing_submissions(self) -> list[str]:
        return [c.name for c in self.cases if not c.has_submission]


def default_papers_dir(root: Path) -> Path | None:
    """`papers/` beside the judge-eval folder (or beside one of its parents), if any."""
    for parent in list(root.resolve().parents)[:3]:
        if (parent / "papers").is_dir():
            return parent / "papers"
    return None


def _papers_by_name(papers_dir: Path | None) -> dict[str, Path]:
    """Paper folders by folder name and by config id (upstream's differ for one paper)."""
    found: dict[str, Path] = {}
    if papers_dir is None:
        return found
    for folder in find_paper_dirs(papers_dir):
        found.setdefault(folder.name, folder)
        try:
            found.setdefault(load_paper(folder).id, folder)
        except LabcoatError:
            continue  # a broken config: reachable by folder name, and loading it says why
    return found


def _locate(root: Path, file: Path) -> tuple[str, str | None, Path]:
    """(paper id, attempt, the attempt's folder) of one expected_result.json."""
    folder = file.parent
    if folder.name == GRADING:  # upstream: <paper>/<attempt>/grading/expected_result.json
        return folder.parent.parent.name, folder.parent.name, folder.parent
    depth = len(file.relative_to(root).parts)
    beside = (folder / SUBMISSION).exists() or (folder / SUBMISSION_TAR).exists()
    if depth >= 3 or beside:  # <paper>/<attempt>/expected_result.json
        return folder.parent.name, folder.name, folder
    return folder.name, None, folder  # <paper>/expected_result.json


def load_judge_eval_data(root: str | Path, papers_dir: str | Path | None = None) -> JudgeEvalData:
    root = Path(root).resolve()
    if not root.is_dir():
        raise LabcoatError(f"{root}: not a folder of human-graded trees")
    files = sorted(p.resolve() for p in root.rglob(EXPECTED_RESULT))
    if not files:
        raise LabcoatError(f"{root}: no {EXPECTED_RESULT} found under it")
    papers_root = Path(papers_dir) if papers_dir is not None else default_papers_dir(root)
    papers = _papers_by_name(papers_root)
    cases: list[JudgeEvalSource] = []
    no_paper: list[str] = []
    for file in files:
        paper_id, attempt, folder = _locate(root, file)
        paper_dir = papers.get(paper_id)
        if paper_dir is not None:
            paper = load_paper(paper_dir)
        else:
            # no paper folder: a stand-in at a path that does not exist, so its texts read as absent
            paper = Paper(id=paper_id, title=paper_id, path=folder / ".no-paper")
            no_paper.append(paper_id)
        tar = folder / SUBMISSION_TAR
        unpacked = folder / SUBMISSION
        cases.append(
            JudgeEvalSource(
                paper_id=paper_id,
                attempt=attempt,
                expected_file=file,
                expected=load_graded_tree(file),
                paper=paper,
                submission_dir=unpacked if unpacked.is_dir() else None,
                submission_tar=tar if tar.is_file() and not unpacked.is_dir() else None,
            )
        )
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise LabcoatError(f"{root}: two human-graded trees for one attempt: {names}")
    _require_content(cases)
    notes = []
    missing = [c.name for c in cases if not c.has_submission]
    if missing:
        notes.append(
            f"{len(missing)} of {len(cases)} case(s) ship no submission ({', '.join(missing)}): "
            "the judge graded the rubric against an empty repository"
        )
    if no_paper:
        shown = ", ".join(sorted(set(no_paper)))
        notes.append(f"no paper folder for: {shown} (the judge saw only the rubric)")
    return JudgeEvalData(cases, notes)


def _require_content(cases: list[JudgeEvalSource]) -> None:
    """One error naming every Git LFS pointer the cases would read, before any work."""
    files: list[Path] = []
    for case in cases:
        if case.submission_tar is not None:
            files.append(case.submission_tar)
        files += [case.paper.path / n for n in PAPER_TEXTS]
    seen = list(dict.fromkeys(f for f in files if is_lfs_pointer(f)))
    if seen:
        require_content(seen)

"""Solvers: the oracle of each mode, and agent mode's workspace setup.

Generation mode needs no sandbox: the research model answers the prompt once
(`inspect_ai.solver.generate()`), the oracle answers with the reference snippet in a
fence, the noop answers nothing. Agent mode puts the masked repository (without the
tests and `*_ref.py` files) in the agent's sandbox; the oracle writes the reference
into it as the agent's file tool would.
"""

from __future__ import annotations

import shutil
import tempfile
import textwrap
from pathlib import Path

from inspect_ai.model import ChatMessageAssistant, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from labcoat._unavailable import unavailable
from labcoat.families._provenance import provenance_prefetch
from labcoat.families.researchcodebench._papers import Paper
from labcoat.families.researchcodebench._samples import AGENT_WORKDIR, SnippetRef
from labcoat.families.researchcodebench._snippets import (
    clean_source,
    insert_completion,
    mask_snippet,
)
from labcoat.grading import copy_into_sandbox

ORACLE_MODEL = "labcoat/oracle"


def reference_code(ref: SnippetRef) -> str:
    """The reference snippet, dedented: what the oracle answers."""
    _, _, snippet = ref.resolve()
    return textwrap.dedent(snippet.body)


@solver
def generation_oracle() -> Solver:
    """Answers every prompt with the reference snippet in a ```python fence."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        reply = f"```python\n{reference_code(SnippetRef.of(state.metadata))}```\n"
        state.messages.append(ChatMessageAssistant(content=reply, model=ORACLE_MODEL))
        state.output = ModelOutput.from_content(model=ORACLE_MODEL, content=reply)
        state.completed = True
        return state

    return solve


def _hidden(paper: Paper, with_paper: bool) -> set[str]:
    """Files of the paper folder the agent must not get: tests and reference copies."""
    hidden = {paper.test_script, *paper.reference_files()}
    if not with_paper:
        hidden.add(paper.paper_file)
    return hidden


def write_agent_repo(ref: SnippetRef, dest: Path) -> None:
    """The masked repository as the agent gets it, written to `dest`."""
    paper, af, snippet = ref.resolve()
    hidden = _hidden(paper, ref.with_paper)

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(paper.folder)
        return {n for n in names if n in ("__pycache__", ".git") or (rel / n).as_posix() in hidden}

    shutil.copytree(paper.folder, dest, ignore=ignore, dirs_exist_ok=True)
    for other in paper.parse_annotated():  # the others keep their code, without markers
        (dest / other.path).write_text(clean_source(other), encoding="utf-8")
    (dest / af.path).write_text(mask_snippet(af, snippet), encoding="utf-8")


@solver
def agent_setup() -> Solver:
    """Copy the masked repository into the agent's sandbox at AGENT_WORKDIR."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        ref = SnippetRef.of(state.metadata)
        # the task folder's content hash (seconds for gigabytes) is under way while the
        # agent works, not on the event loop when the sample is scored (see provenance)
        provenance_prefetch(state.metadata)
        with tempfile.TemporaryDirectory(prefix="labcoat-rcb-") as tmp:
            write_agent_repo(ref, Path(tmp))
            await copy_into_sandbox(Path(tmp), AGENT_WORKDIR)
        return state

    return solve


@solver
def agent_oracle() -> Solver:
    """Writes the reference block into the masked file, through the sandbox API."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        ref = SnippetRef.of(state.metadata)
        _, af, snippet = ref.resolve()
        filled = insert_completion(mask_snippet(af, snippet), snippet, reference_code(ref))
        await sandbox().write_file(f"{AGENT_WORKDIR}/{af.path}", filled)
        state.output.completion = "Implemented the block."
        state.completed = True
        return state

    return solve


@solver
def require_available() -> Solver:
    """Errors the sample when its paper cannot be graded here, before any model call:
    the tables then list the paper as `unavailable: <reason>`."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        ref = SnippetRef.of(state.metadata)
        if ref.unavailable:
            raise unavailable(ref.unavailable)
        return state

    return solve

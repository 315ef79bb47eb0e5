"""Inspect samples: one per snippet, and the snippet a sample's metadata points back to."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from inspect_ai.dataset import Sample

from labcoat.families._sandbox import sample_sandbox
from labcoat.families.researchcodebench._discover import FAMILY
from labcoat.families.researchcodebench._papers import Paper, load_papers
from labcoat.families.researchcodebench._prompt import agent_instructions, generation_prompt
from labcoat.families.researchcodebench._snippets import AnnotatedFile, Snippet, mask_snippet
from labcoat.sandbox import BwrapConfig, PythonEnv

Mode = Literal["generate", "agent"]
MODES: tuple[Mode, ...] = ("generate", "agent")
AGENT_WORKDIR = "/home/agent/work"
AGENT_TIME_LIMIT_MINUTES = 30  # agent mode, per snippet


@dataclass(frozen=True)
class SnippetRef:
    """What a sample's metadata (`metadata["researchcodebench"]`) says about its snippet."""

    pset: str
    paper: str
    file: str
    snippet: str
    name: str
    weight: int
    depth: int
    mode: Mode
    with_paper: bool
    environment: PythonEnv
    timeout: float
    environment_notes: tuple[str, ...] = ()
    """Changes made to install the environment here (CPU builds, closest versions, lines
    left out), and how upstream's conda lines were mapped."""
    unavailable: str | None = None
    """Why the paper cannot be graded on this machine (its samples error with this)."""

    @classmethod
    def of(cls, metadata: dict[str, Any]) -> SnippetRef:
        m = dict(metadata[FAMILY])
        m["environment"] = PythonEnv.model_validate(m["environment"])
        m["environment_notes"] = tuple(m.get("environment_notes") or ())
        return cls(**m)

    def to_metadata(self) -> dict[str, Any]:
        return {**asdict(self), "environment": self.environment.model_dump(mode="json")}

    def resolve(self) -> tuple[Paper, AnnotatedFile, Snippet]:
        paper = _papers(self.pset)[self.paper]
        af = next(f for f in paper.parse_annotated() if f.path == self.file)
        return paper, af, af.snippet(self.snippet)


@lru_cache(maxsize=16)
def _papers(pset: str) -> dict[str, Paper]:
    return {p.id: p for p in load_papers(Path(pset))}


def snippet_samples(
    paper: Paper,
    *,
    mode: Mode,
    with_paper: bool,
    environment: PythonEnv,
    timeout: float,
    sandbox: str,
    environment_notes: tuple[str, ...] = (),
    unavailable: str | None = None,
) -> list[Sample]:
    """The paper's snippets as samples, in file order; ids are `PAPER/FILE::NAME`."""
    samples = []
    for af in paper.parse_annotated():
        for s in af.snippets:
            ref = SnippetRef(
                pset=str(paper.folder.parent),
                paper=paper.id,
                file=af.path,
                snippet=s.id,
                name=s.name,
                weight=s.weight,
                depth=s.depth,
                mode=mode,
                with_paper=with_paper,
                environment=environment,
                timeout=timeout,
                environment_notes=environment_notes,
                unavailable=unavailable,
            )
            metadata = {
                "family": FAMILY,
                "task_id": paper.id,
                "title": paper.title,
                "time_limit_minutes": AGENT_TIME_LIMIT_MINUTES if mode == "agent" else None,
                FAMILY: ref.to_metadata(),
            }
            if mode == "generate":
                prompt = generation_prompt(paper, mask_snippet(af, s), with_paper=with_paper)
                samples.append(Sample(id=f"{paper.id}/{s.id}", input=prompt, metadata=metadata))
                continue
            config = BwrapConfig(workdir=AGENT_WORKDIR, environment=environment)
            samples.append(
                Sample(
                    id=f"{paper.id}/{s.id}",
                    input=agent_instructions(
                        paper, s, workdir=AGENT_WORKDIR, with_paper=with_paper
                    ),
                    metadata=metadata,
                    sandbox=sample_sandbox(sandbox, config),
                )
            )
    return samples

"""Which samples of the logs under a folder can be graded again, and why not the others."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, list_eval_logs, read_eval_log

from labcoat._errors import LabcoatError
from labcoat.families import family_module
from labcoat.families._score import NORMALIZED, RAW
from labcoat.grading import KEPT, find_manifest
from labcoat.grading._keep import STORE_ROOT

logger = logging.getLogger(__name__)

REGRADE_META = "labcoat_regrade"
"""Task metadata of a regrade's log: the grader version, when, and the logs it regraded."""
ORIGINAL = "labcoat:regrade:original"
"""Store key of a regraded sample: the sample it regrades (log, id, epoch, uuid, old score)."""


@dataclass
class Candidate:
    """One sample (and epoch) of an original log."""

    log: str
    family: str
    task_args: dict[str, Any]
    model_roles: dict[str, str | list[str]]
    """Each role's model, or models (Inspect lets a role name a list)."""
    sample_id: str
    epoch: int
    uuid: str
    old: dict[str, float | None]
    manifest: Path | None = None
    reason: str | None = None
    """Why it cannot be regraded (None: it can)."""

    def original(self) -> dict[str, Any]:
        return {
            "log": self.log,
            "sample_id": self.sample_id,
            "epoch": self.epoch,
            "uuid": self.uuid,
            "old": self.old,
        }


@dataclass
class Found:
    candidates: list[Candidate] = field(default_factory=list)
    logs: int = 0

    @property
    def regradable(self) -> list[Candidate]:
        return [c for c in self.candidates if c.reason is None]


def is_regrade(log: EvalLog) -> bool:
    return REGRADE_META in (log.eval.metadata or {})


def score_figures(sample: EvalSample) -> dict[str, float | None]:
    """(normalized, raw) of the sample's labcoat score; None where it has none."""
    score = next(iter((sample.scores or {}).values()), None)
    value = score.value if score is not None else None
    if not isinstance(value, dict):
        return {NORMALIZED: None, RAW: None}
    return {
        k: (float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None)
        for k, v in ((NORMALIZED, value.get(NORMALIZED)), (RAW, value.get(RAW)))
    }


def kept_manifests(root: Path) -> dict[str, Path]:
    """Every manifest under `root` by sample uuid (a Ray run keeps them beside its shard
    logs, below the merged log's folder)."""
    return {
        path.stem: path
        for path in root.rglob("samples/*.json")
        if path.parent.parent.name == STORE_ROOT
    }


def _manifest(sample: EvalSample, log_dir: Path, index: dict[str, Path]) -> Path | None:
    """The score's record of the kept workspace, else the manifest named by the sample's
    uuid (kept before a scorer that then raised, or beside a shard log)."""
    score = next(iter((sample.scores or {}).values()), None)
    kept = (score.metadata or {}).get(KEPT) if score is not None else None
    if isinstance(kept, dict) and isinstance(kept.get("manifest"), str):
        path = log_dir / kept["manifest"]
        if path.is_file():
            return path
    if not sample.uuid:
        return None
    return find_manifest(log_dir, sample.uuid) or index.get(sample.uuid)


def _family(log: EvalLog) -> str | None:
    family = str((log.eval.metadata or {}).get("labcoat_family") or "")
    if not family:
        return None
    try:
        family_module(family)
    except LabcoatError:
        return None
    return family


def find_samples(log_dir: Path) -> Found:
    """Every sample of every original log under `log_dir` (regrades' own logs left out),
    newest log first, each sample once (a retried eval set copies finished samples)."""
    found = Found()
    logs = []
    for info in list_eval_logs(str(log_dir), recursive=True):
        if any(part.endswith(".shards") for part in Path(info.name).parts[:-1]):
            continue  # a distributed run's per-sample logs, merged into its .eval
        try:
            header = read_eval_log(info.name, header_only=True)
        except Exception as ex:  # a broken log is not the others' problem
            logger.warning("skipped %s: not a readable log (%s)", info.name, ex)
            continue
        if not is_regrade(header):
            logs.append((header.eval.created, info.name, header))
    seen: set[str] = set()
    index = kept_manifests(log_dir)
    for _, location, header in sorted(logs, key=lambda t: (t[0], t[1]), reverse=True):
        found.logs += 1
        path = Path(location.removeprefix("file://"))
        family = _family(header)
        roles = {
            role: [c.model for c in cfg] if isinstance(cfg, list) else cfg.model
            for role, cfg in (header.eval.model_roles or {}).items()
        }
        for sample in read_eval_log(location, exclude_fields={"messages"}).samples or []:
            if sample.uuid in seen:
                continue
            seen.add(sample.uuid or "")
            candidate = Candidate(
                log=str(path),
                family=family or str(header.eval.task),
                task_args=dict(header.eval.task_args),
                model_roles=roles,
                sample_id=str(sample.id),
                epoch=int(sample.epoch),
                uuid=str(sample.uuid or ""),
                old=score_figures(sample),
            )
            if family is None:
                candidate.reason = f"not a labcoat task ({header.eval.task})"
            elif not sample.uuid:
                candidate.reason = "the log records no sample uuid"
            else:
                candidate.manifest = _manifest(sample, path.parent, index)
                if candidate.manifest is None:
                    candidate.reason = (
                        "no kept workspace (a log from before workspaces were kept, or the "
                        "sample ended before scoring)"
                    )
            found.candidates.append(candidate)
    return found

"""Read `.eval` logs (a folder or file, local or any fsspec URL Inspect supports).

Retries of one task in one eval set leave several logs; Inspect seeds each attempt
from the previous one, so the newest log of an (eval set, task) holds everything and
the older ones are marked `superseded_by` and skipped. Samples a log should hold but
does not (the eval stopped early) become errored runs, so they are counted.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import unquote

from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log

from labcoat._util.eval_logs import Warn, unreadable
from labcoat.analysis._data import RunData, build
from labcoat.analysis._families import family_for
from labcoat.analysis._family import Row, label_of
from labcoat.analysis._family_researchcodebench import with_paper
from labcoat.analysis._provenance import log_fields, provenance_fields
from labcoat.analysis._regrades import Regrades, collect, original_log
from labcoat.analysis._sample_rows import LogContext, SampleRows, missing_row, sample_rows
from labcoat.integrity import INSPECT_KEY
from labcoat.regrade import is_regrade, regrade_folders

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
"""Called as progress(stage, done, total) while reading: stages `headers`, `samples`."""

LOG_SUFFIXES = (".eval", ".json")
# Above this size a log is read without its messages (the analysis never uses them):
# Inspect's field-skipping reader costs more than it saves on small logs, and wins
# clearly on long transcripts (measured 2.4x on 1.4 MiB logs, 0.4x on 8 KiB ones).
SKIP_MESSAGES_ABOVE = 256 * 1024


def _uri(source: str) -> str:
    return source if "://" in source else Path(source).resolve().as_uri()


def _is_file(source: str) -> bool:
    return source.endswith(LOG_SUFFIXES) and not source.endswith("logs.json")


SHARDS_SUFFIX = ".shards"
"""`<name>.shards/<k>/` beside `<name>.eval`: the per-sample logs of a distributed run
(`--ray`), already merged into `<name>.eval`, so never read twice."""

LogFile = tuple[str, str, int | None]
"""(location, name relative to the root, size in bytes when known)."""


def log_files(source: str | Path) -> tuple[str, list[LogFile]]:
    """(root, log files) of the logs at `source`."""
    source = str(source)
    if _is_file(source):
        root = _uri(source).rsplit("/", 1)[0]
        size = Path(source).stat().st_size if Path(source).is_file() else None
        return root, [(source, source.replace("\\", "/").rsplit("/", 1)[-1], size)]
    root = _uri(source).rstrip("/")
    out = []
    for info in list_eval_logs(source, recursive=True):
        name = unquote(info.name)
        prefix = unquote(root) + "/"
        rel = name[len(prefix) :] if name.startswith(prefix) else name.rsplit("/", 1)[-1]
        if any(part.endswith(SHARDS_SUFFIX) for part in rel.split("/")[:-1]):
            continue
        out.append((info.name, rel, info.size))
    return root, sorted(out, key=lambda pair: pair[1])


def context(log: EvalLog, location: str, name: str) -> LogContext:
    meta = log.eval.metadata or {}
    family = str(meta.get("labcoat_family") or log.eval.task)
    reader = family_for(family)
    model = str(log.eval.model)
    agent = str(log.eval.task_args.get("agent") or meta.get("agent") or "")
    variant = reader.variant(log)
    return LogContext(
        location=location,
        name=name,
        eval_id=log.eval.eval_id,
        family=family,
        model=model,
        agent=agent,
        variant=variant,
        label=label_of(model, agent, variant),
        with_paper=with_paper(log),
        reader=reader,
    )


def _inspected(log: EvalLog) -> str | None:
    """When `labcoat inspect` last read this log (None: never)."""
    with contextlib.suppress(Exception):
        record = (log.metadata or {}).get(INSPECT_KEY)
        if isinstance(record, dict):
            return str(record.get("time"))
    return None


def _log_row(log: EvalLog, ctx: LogContext) -> Row:
    return {
        "log": ctx.location,
        "name": ctx.name,
        "eval_id": log.eval.eval_id,
        "eval_set_id": log.eval.eval_set_id,
        "task_identity": log.eval.task_id,
        "task": log.eval.task,
        "status": log.status,
        "created": log.eval.created,
        "family": ctx.family,
        "model": ctx.model,
        "agent": ctx.agent,
        "variant": ctx.variant,
        "label": ctx.label,
        "samples": 0,
        "superseded_by": None,
        "inspected": _inspected(log),
        "inspect_version": log_fields(log)["inspect_version"],
        "error": log.error.message.strip().splitlines()[0][:300]
        if log.error and log.error.message
        else None,
    }


def _mark_superseded(rows: list[Row]) -> None:
    """Within an eval set, only the newest log of each task counts."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row["eval_set_id"]:
            groups.setdefault((row["eval_set_id"], row["task_identity"]), []).append(row)
    for group in groups.values():
        group.sort(key=lambda r: (r["created"], r["name"]))
        for older in group[:-1]:
            older["superseded_by"] = group[-1]["name"]


def _expected(log: EvalLog) -> list[tuple[str, int]]:
    """The samples an unfinished log should hold (a finished one may skip some on
    purpose, e.g. early stopping, so only unfinished logs are checked)."""
    ids = log.eval.dataset.sample_ids
    if log.status == "success":
        return []
    epochs = log.eval.config.epochs or 1
    if not ids:
        return []
    return [(str(i), e) for i, e in itertools.product(ids, range(1, epochs + 1))]


def _read_samples(
    log: EvalLog, ctx: LogContext, size: int | None, regrades: Regrades
) -> list[SampleRows]:
    out = []
    seen: set[tuple[str, int]] = set()
    task_of: dict[str, str] = {}
    why = f"missing: the log has status '{log.status}'"
    logged = log_fields(log)
    try:
        # one read per log: Inspect's per-sample reader measured slower
        big = size is not None and size > SKIP_MESSAGES_ABOVE
        skip = {"messages"} if big else None
        for sample in read_eval_log(ctx.location, exclude_fields=skip).samples or []:
            original = sample
            sample, regraded = regrades.apply(sample)  # the newest grading counts
            rows = sample_rows(ctx, sample)
            rows.sample.update(regraded)
            rows.sample.update(provenance_fields(original, sample, logged))
            out.append(rows)
            seen.add((str(sample.id), int(sample.epoch)))
            task_of[str(sample.id)] = rows.sample["task_id"]
    except Exception as ex:  # a truncated or still-open log: keep what was read, say why
        first = str(ex).strip().splitlines()[0][:200] if str(ex).strip() else ""
        why = f"missing: reading the log failed ({type(ex).__name__}: {first})"
    for sample_id, epoch in _expected(log):
        if (sample_id, epoch) not in seen:
            task_id = task_of.get(sample_id) or ctx.reader.task_of(sample_id)
            row = missing_row(ctx, task_id, sample_id, epoch, why)
            out.append(SampleRows({**row, **logged}))
    return out


def _local(location: str) -> str:
    """A local log's location as one spelling (a path, a file:// URI)."""
    return str(Path(unquote(location.removeprefix("file://"))).resolve())


def read_runs(
    source: str | Path | Iterable[str | Path],
    *,
    progress: Progress | None = None,
    view_url: str | None = None,
    warn: Warn | None = None,
) -> RunData:
    """Read every log at `source` (folders, files, fsspec URLs) into `RunData` tables.

    `view_url` sets the base of the links to each run in `inspect view` (see
    `labcoat.analysis.view_link`). A log that cannot be read at all (empty, truncated,
    corrupt) is left out, and `warn` (else the logger) is told, one line per log.
    """
    sources = [source] if isinstance(source, str | Path) else list(source)
    files: list[LogFile] = []
    roots = []
    beside: set[str] = set()  # regrade logs found beside a source, not in it
    for src in sources:
        root, found = log_files(src)
        roots.append(root)
        files += found
        for folder in regrade_folders(src):
            _, regrade_files = log_files(folder)
            files += [(loc, f"../{folder.name}/{rel}", size) for loc, rel, size in regrade_files]
            beside.update(loc for loc, _, _ in regrade_files)
    originals = {_local(loc) for loc, _, _ in files if loc not in beside}
    headers: list[tuple[EvalLog, LogContext, Row, int | None]] = []
    for done, (location, name, size) in enumerate(files, 1):
        try:
            header = read_eval_log(location, header_only=True)
            if location in beside and (
                not is_regrade(header) or _local(original_log(header)) not in originals
            ):
                continue  # beside a log that was given: only the regrades of what is read
            ctx = context(header, location, name)
            headers.append((header, ctx, _log_row(header, ctx), size))
        except Exception as ex:  # the file's fault: say which, build from the others
            (warn or logger.warning)(unreadable(location, ex))
        if progress:
            progress("headers", done, len(files))
    _mark_superseded([row for _, _, row, _ in headers])
    regrade_logs = [(h, ctx.location) for h, ctx, _, _ in headers if is_regrade(h)]
    for header, _, row, _ in headers:
        if is_regrade(header):  # its samples replace scores; they are no runs of their own
            row["superseded_by"] = f"regrade of {Path(original_log(header)).name}"
    regrades = collect(regrade_logs)
    samples: list[SampleRows] = []
    for done, (header, ctx, row, size) in enumerate(headers, 1):
        if row["superseded_by"] is None:
            rows = _read_samples(header, ctx, size, regrades)
            row["samples"] = len(rows)
            samples += rows
        if progress:
            progress("samples", done, len(headers))
    return build([row for _, _, row, _ in headers], samples, roots=roots, view_url=view_url)

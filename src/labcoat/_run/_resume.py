"""What a re-run finds already done: `labcoat eval` run again on the same log folder resumes
the eval set (Inspect keeps each sample that finished without error), and says so in one
line before it starts, so the person knows what the earlier run left."""

from __future__ import annotations

import contextlib
from typing import Any

from inspect_ai.log import list_eval_logs, read_eval_log, read_eval_log_sample_summaries

from labcoat._run._logdir import is_remote


def samples_done(log_dir: str) -> int | None:
    """The samples in `log_dir`'s logs that finished without error (what a resume keeps);
    None when the folder holds no log (a first run) or is remote (not read here)."""
    if is_remote(log_dir):
        return None
    logs = list_eval_logs(log_dir, recursive=False)
    if not logs:
        return None
    done: set[tuple[str, str, int]] = set()
    for info in logs:
        with contextlib.suppress(Exception):  # a log being written, or not a log
            task = read_eval_log(info.name, header_only=True).eval.task_id
            for s in read_eval_log_sample_summaries(info.name):
                if s.error is None and s.scores:
                    done.add((task, str(s.id), s.epoch))
    return len(done)


def samples_planned(
    tasks: list[Any], epochs: int | None, limit: int | tuple[int, int] | None = None
) -> int:
    """The samples the eval set runs: each task's dataset (within Inspect's `limit`: the
    first N, or a 0-based (start, stop)) times its epochs."""
    return sum(_limited(len(t.dataset), limit) * (epochs or _task_epochs(t)) for t in tasks)


def _limited(size: int, limit: int | tuple[int, int] | None) -> int:
    if limit is None:
        return size
    if isinstance(limit, int):
        return min(size, limit)
    start, stop = limit
    return max(0, min(size, stop) - start)


def _task_epochs(task: Any) -> int:
    epochs = getattr(task, "epochs", None)
    return epochs if isinstance(epochs, int) and epochs > 0 else 1


def resume_line(
    log_dir: str,
    tasks: list[Any],
    epochs: int | None,
    limit: int | tuple[int, int] | None = None,
) -> str | None:
    """`resuming: N of M samples already done in LOGDIR`, or None on a first run."""
    done = samples_done(log_dir)
    if done is None:
        return None
    planned = samples_planned(tasks, epochs, limit)
    return f"resuming: {min(done, planned)} of {planned} samples already done in {log_dir}"

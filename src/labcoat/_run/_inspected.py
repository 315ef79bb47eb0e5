"""Results read back from an eval's logs, after the integrity inspector has read them."""

from __future__ import annotations

import logging

from inspect_ai.log import EvalLog, read_eval_log

from labcoat._run._results import TaskResult, collect_results

logger = logging.getLogger(__name__)


def inspected_results(logs: list[EvalLog], inspect: bool = True) -> list[TaskResult]:
    """`collect_results` of the logs; with `inspect`, the inspector's findings go into
    the logs first, so that every table marks the flagged runs."""
    if not inspect:
        return collect_results(logs)
    from labcoat.integrity import inspect_logs

    locations = [log.location for log in logs if log.location]
    try:
        inspect_logs(locations)
    except Exception as ex:  # the runs are recorded: never lose them to the inspection
        logger.warning("integrity inspection failed (%s); run `labcoat inspect` later", ex)
        return collect_results(logs)
    return collect_results([read_eval_log(location, header_only=True) for location in locations])

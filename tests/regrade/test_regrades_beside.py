"""Reports find the regrades that lie beside an eval set's folder (`<folder>.regrades/`,
where `labcoat regrade` writes them so the eval set still resumes): reading the folder,
or one of its logs, uses them; reading another log of that folder lists none of them.
Synthetic logs: no eval runs."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.log import read_eval_log, write_eval_log

import labcoat.analysis as an
from labcoat.regrade import ORIGINAL, REGRADE_META, regrade_folders, regrades_folder
from tests.analysis._synthetic import Sample, write_log


def _with_uuid(path: Path, uuid: str) -> Path:
    log = read_eval_log(str(path))
    assert log.samples
    log.samples[0].uuid = uuid
    write_eval_log(log, str(path))
    return path


def test_reports_read_the_regrades_beside_the_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    first = _with_uuid(write_log(run, [Sample("t1", normalized=0.25)], name="a.eval"), "ua")
    second = _with_uuid(write_log(run, [Sample("t2", normalized=0.5)], name="b.eval"), "ub")
    beside = regrades_folder(first) / "2026-01-01T00-00-00"
    assert beside.parent == tmp_path / "run.regrades"
    beside.mkdir(parents=True)
    meta = {"original_log": str(first), "grader": {}, "regraded_at": "2026-01-02T00:00:00"}
    original = {"uuid": "ua", "log": str(first), "sample_id": "t1", "epoch": 1}
    write_log(
        beside,
        [Sample("t1", normalized=1.0, store={ORIGINAL: original})],
        eval_metadata={REGRADE_META: meta},
        name="regrade.eval",
    )
    assert regrade_folders(run) == regrade_folders(first) == [beside.parent]

    for source in (run, first):
        data = an.read_runs(source)
        changes = an.regrade_changes(data.samples)
        assert list(zip(changes["old"], changes["new"], strict=True)) == [(0.25, 1.0)]
    # a log the regrade is not of: its report lists no regrade
    data = an.read_runs(second)
    assert list(data.logs["name"]) == ["b.eval"]
    assert an.regrade_changes(data.samples).empty

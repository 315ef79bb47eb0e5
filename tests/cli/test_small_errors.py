"""The smaller errors of issue 45 (item 12): each one line that says what to do, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli_captured


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert lines[0].startswith("labcoat: error: "), lines
    return lines[0]


def test_logs_in_s3_without_credentials_say_how_to_give_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No AWS credentials anywhere (environment, files, instance metadata): botocore's
    NoCredentialsError, raised before any request is sent, becomes the line."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # offline: no metadata server
    url = "s3://labcoat-test-bucket/logs"
    for argv in (("report", url, "-o", str(tmp_path / "r.html")), ("card", url)):
        code, _, err = run_cli_captured(capsys, *argv)
        line = _one_error_line(err)
        assert code == 2, err
        assert line.startswith(f"labcoat: error: {url}: no AWS credentials found: "), line
        assert "AWS_ACCESS_KEY_ID" in line and "aws configure" in line


def test_a_report_under_a_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "notes"
    blocker.write_text("a file, not a folder\n")
    for out in (blocker / "x.html", blocker / "deeper" / "x.html"):
        code, _, err = run_cli_captured(capsys, "report", str(tmp_path), "-o", str(out))
        line = _one_error_line(err)
        assert code == 2
        assert f"({blocker} is a file, not a folder)" in line, line
        assert "File exists" not in line


def test_rubric_stats_takes_a_suite_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli_captured(capsys, "rubric", "stats", "mini", "--json")
    assert code == 0, err
    assert '"papers": 2' in out
    code, _, err = run_cli_captured(capsys, "rubric", "stats", "mnii")
    line = _one_error_line(err)
    assert code == 2 and "mnii: not a bundled suite" in line and "(did you mean mini?)" in line


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("list", "mnii"), "(did you mean mini?)"),
        (
            ("check", "mini", "--no-build", "--task", "prefix_sum/mian"),
            "did you mean prefix_sum/main?",
        ),
        (
            ("check", "mini", "--no-build", "--task", "ts-atribution"),
            "did you mean ts-attribution?",
        ),
    ],
)
def test_a_typo_gets_a_did_you_mean(
    argv: tuple[str, ...], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli_captured(capsys, *argv)
    line = _one_error_line(err)
    assert code == 2 and expected in line, line


def test_a_split_s_paper_typo_gets_a_did_you_mean() -> None:
    from labcoat._errors import LabcoatError
    from labcoat.families.paperbench._papers import resolve_names

    known = [("spectral-shrinkage", "spectral-shrinkage"), ("tail-averaged-sgd", "tail-sgd")]
    with pytest.raises(
        LabcoatError, match=r"spectral-shrinkge \(did you mean spectral-shrinkage\?\)"
    ):
        resolve_names(["spectral-shrinkge"], known)
    # nothing close: no guess
    with pytest.raises(LabcoatError) as caught:
        resolve_names(["zzz"], known)
    assert "did you mean" not in str(caught.value)


def test_regrade_of_a_task_the_logs_lack_is_an_error_with_a_guess(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`regrade --task` with a typo was an empty table and exit 0. The logs' samples are
    played by a stand-in (a real log needs an eval run of minutes)."""
    from labcoat.regrade import _run
    from labcoat.regrade._find import Candidate, Found

    sample = Candidate(
        log="x.eval",
        family="researchcodebench",
        task_args={"tasks": ["adaptive-huber"]},
        model_roles={},
        sample_id="adaptive-huber",
        epoch=1,
        uuid="u1",
        old={"normalized": 0.0},
        reason="no kept workspace",
    )
    monkeypatch.setattr(_run, "find_samples", lambda log_dir: Found([sample], logs=1))
    (tmp_path / "logs").mkdir()
    code, _, err = run_cli_captured(
        capsys, "regrade", str(tmp_path / "logs"), "--task", "adaptive-hubr"
    )
    line = _one_error_line(err)
    assert code == 2
    assert "no sample of task(s) adaptive-hubr (did you mean adaptive-huber?)" in line, line
    # the id as it is: no error (the sample is listed as not regradable)
    code, out, err = run_cli_captured(
        capsys, "regrade", str(tmp_path / "logs"), "--task", "adaptive-huber"
    )
    assert code == 0 and "adaptive-huber" in out, err

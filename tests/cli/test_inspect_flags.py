"""`labcoat eval` takes `inspect eval`'s --limit, --display, --temperature and
--model-base-url with Inspect's meanings, and they reach Inspect; Inspect's options that
labcoat has under another name say which; `--help` comes in sections, common first."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli_captured
from inspect_ai.log import list_eval_logs, read_eval_log
from openai_stub import openai_stub, text_turn

from labcoat._run import _execute

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bwrap (bubblewrap)")


@needs_bwrap
def test_limit_temperature_base_url_and_display_reach_inspect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One real run (one model call per snippet: ResearchCodeBench's generate mode) of a
    paper with 7 snippets, against a real HTTP server that only --model-base-url names."""
    monkeypatch.setenv("LOCALSTUB_API_KEY", "sk-local")
    monkeypatch.delenv("LOCALSTUB_BASE_URL", raising=False)
    seen: dict[str, Any] = {}
    real_eval_set = _execute.eval_set

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.update(kwargs)
        return real_eval_set(*args, **kwargs)

    monkeypatch.setattr(_execute, "eval_set", spy)
    logs = tmp_path / "logs"
    with openai_stub([text_turn("```python\npass\n```")]) as stub:
        code, _, err = run_cli_captured(
            capsys, "eval", "mini", "--task", "adaptive-huber", "--agent", "research",
            "--model", "openai-api/localstub/scripted", "--model-base-url", stub.base_url,
            "--temperature", "0.25", "--limit", "1", "--display", "none", "--no-inspect",
            "--log-dir", str(logs),
        )  # fmt: skip
    assert code == 0, err[-3000:]
    assert seen["display"] == "none" and seen["limit"] == 1
    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info.name)
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 1  # of the paper's 7 snippets
    assert log.eval.config.limit == 1
    assert log.eval.model_generate_config.temperature == 0.25
    # the calls went to the server --model-base-url named, with the temperature
    assert len(stub.requests) == 1
    assert stub.requests[0]["temperature"] == 0.25


@pytest.mark.parametrize(
    ("given", "expected"),
    [(["--limit", "0"], "'0': expected a count"), (["--limit", "5-2"], "'5-2': expected")],
)
def test_a_bad_limit_is_one_line(
    given: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli_captured(capsys, "eval", "mini", "--agent", "noop", *given)
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1


def test_a_limit_range_is_inspects() -> None:
    """`--limit 10-20` is samples 10 to 20 counted from 1: Inspect's (9, 20)."""
    from labcoat._cli._options import SampleLimit

    assert SampleLimit().convert("10-20", None, None) == (9, 20)
    assert SampleLimit().convert("3", None, None) == 3


@pytest.mark.parametrize(
    ("inspect_option", "instead"),
    [
        (["--sample-id", "3"], "--task ID"),
        (["--attempt-timeout", "60"], "--model-timeout"),
        (["--no-fail-on-error"], "re-run retries them"),
    ],
)
def test_inspects_options_say_where_they_went(
    inspect_option: list[str], instead: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli_captured(capsys, "eval", "mini", "--agent", "noop", *inspect_option)
    assert code == 2
    [line] = err.strip().splitlines()
    assert f"{inspect_option[0]} is Inspect's" in line and instead in line


def test_limit_with_ray_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli_captured(
        capsys, "eval", "mini", "--agent", "noop", "--limit", "1", "--ray"
    )
    assert code == 2 and "--limit does not work with --ray" in err


def test_help_comes_in_sections_common_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli_captured(capsys, "eval", "--help")
    assert code == 0
    headings = [line for line in out.splitlines() if line and line.endswith(":")]
    assert headings[0] == "Common options:"
    common = out.split("Common options:")[1].split("\n\n")[0]
    for option in ("--agent", "--model ", "--task", "--limit", "--log-dir"):
        assert option in common
    model = out.split("Model:")[1].split("\n\n")[0]
    assert "--temperature" in model and "--model-base-url" in model
    assert "--display" in out and "--sample-id" not in out  # hidden: it only says where
    # every option is in a named section: only --help is left for "Other options"
    other = out.split("Other options:")[1]
    assert [line.split()[0] for line in other.strip().splitlines()] == ["-h,"]

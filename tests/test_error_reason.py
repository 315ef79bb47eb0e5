"""The one line an errored sample is reported with in eval's and validate's tables."""

from __future__ import annotations

from labcoat._run._results import error_reason


def test_the_errors_own_line() -> None:
    assert error_reason(None) == "no score"
    assert error_reason("Traceback (most recent call last):\n  x\nRuntimeError: boom") == (
        "RuntimeError: boom"
    )


def test_a_recorded_exception_is_unwrapped() -> None:
    assert error_reason('GraderFailed("t: the grader exited 1: X")') == "t: the grader exited 1: X"
    assert error_reason("ValueError('it\\'s bad')") == "it's bad"
    message = 'EnvironmentBuildError("environment unavailable: no host [/t/requirements.txt]")'
    assert error_reason(message) == "environment unavailable: no host [/t/requirements.txt]"

"""Root's stand-in for the one-user mode maps the agent to host uid 0 (every sysctl root
may write would be writable from its sandbox): labcoat refuses it unless asked for it."""

from __future__ import annotations

import os

import pytest

from labcoat._errors import LabcoatError
from labcoat.sandbox import isolation
from labcoat.sandbox._layout import UNSAFE_STANDIN_ENV, Isolation

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the stand-in exists only as root")


@pytest.mark.parametrize(
    "variable, value", [("LABCOAT_SANDBOX_MODE", "one-user"), ("LABCOAT_SANDBOX_USERNS", "1")]
)
def test_one_user_as_root_is_refused_in_one_line(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(UNSAFE_STANDIN_ENV, raising=False)
    monkeypatch.delenv("LABCOAT_SANDBOX_MODE", raising=False)
    monkeypatch.setenv(variable, value)
    with pytest.raises(LabcoatError, match="as an ordinary user"):
        isolation()


def test_the_tests_may_ask_for_the_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UNSAFE_STANDIN_ENV, "1")
    monkeypatch.setenv("LABCOAT_SANDBOX_MODE", "one-user")
    assert isolation() is Isolation.ONE_USER
    monkeypatch.setenv("LABCOAT_SANDBOX_MODE", "auto")
    assert isolation() is Isolation.ROOT

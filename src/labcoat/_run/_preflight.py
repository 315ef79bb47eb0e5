"""A model server's address, tried before any sandbox starts.

An OpenAI-compatible client retries a server that does not answer for minutes, after
the sandboxes are up. One short real request first (connect, then `GET <base>/models`)
turns a wrong address into one line at once. Any HTTP answer passes, an error status
included: the server is there, and what it thinks of the request is the run's business.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from labcoat._errors import LabcoatError, one_line

TIMEOUT_SECONDS = 5.0
"""Connect and answer, each: a server that takes longer for its model list is not up."""

INSPECT_BASE_URL_ENV = "INSPECT_EVAL_MODEL_BASE_URL"
"""Inspect's fallback for every provider's base URL."""


@dataclass(frozen=True)
class BaseUrl:
    """A base URL and where it was set: `--model-base-url`, an environment variable, or
    a provider's local default."""

    url: str
    source: str
    fix: str
    """What to change to point the model elsewhere."""


def given_base_url(
    provider: str,
    url: str | None,
    base_url: str | None,
    env_vars: tuple[str, ...] = (),
    env: Mapping[str, str] = os.environ,
) -> BaseUrl | None:
    """Where `url`, the base URL the provider will use, came from; None when nobody set
    it (the provider's hosted default is not a server of the user's)."""
    if base_url:
        return BaseUrl(base_url, "--model-base-url", "fix --model-base-url")
    for variable in env_vars:  # the provider's own variables, in Inspect's order
        if env.get(variable) and (url is None or env[variable] == url):
            return BaseUrl(env[variable], variable, f"set {variable} to its address")
    if url is None:
        return None
    # a provider created by Inspect tells the URL, not the variable: find the variable
    prefix = provider.upper().replace("-", "_")
    named = sorted(
        (not k.startswith(prefix), k)
        for k, v in env.items()
        if v == url and (k.endswith("_BASE_URL") or k == INSPECT_BASE_URL_ENV)
    )
    if named:
        variable = named[0][1]
        return BaseUrl(url, variable, f"set {variable} to its address")
    return None


def check_answers(where: str, base: BaseUrl) -> None:
    """Raise one line naming the URL, where it was set and what to do, unless an HTTP
    server answers at `base.url` within a few seconds."""
    import httpx

    probe = base.url.rstrip("/") + "/models"
    problem: str | None = None
    try:
        # no key is sent: a wrong address must not receive it; a 401 still answers
        httpx.get(probe, timeout=TIMEOUT_SECONDS, follow_redirects=False)
    except httpx.TimeoutException:
        problem = f"no answer within {TIMEOUT_SECONDS:g} s"
    except httpx.UnsupportedProtocol:
        problem = "not an http:// or https:// URL"
    except (httpx.HTTPError, ValueError) as ex:  # refused, no such host, TLS, bad URL
        problem = _reason(ex)
    if problem is not None:
        raise LabcoatError(
            f"{where}: no model server answers at {base.url} (from {base.source}): "
            f"{problem}; start the server, or {base.fix}"
        )


def _reason(ex: BaseException) -> str:
    """The innermost cause's words (httpx wraps the socket's `[Errno 111] ...`)."""
    while ex.__cause__ is not None or ex.__context__ is not None:
        ex = ex.__cause__ or ex.__context__  # type: ignore[assignment]
    reason = getattr(ex, "strerror", None) or one_line(ex) or type(ex).__name__
    return str(reason)[:200]

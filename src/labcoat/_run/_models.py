"""Model names checked before anything runs: a known provider, its package installed,
and (for hosted APIs) a client Inspect can create, which is where a missing key shows."""

from __future__ import annotations

import importlib.util
import os
import socket
import urllib.parse
from typing import Any

from labcoat._errors import LabcoatError, one_line, without_markup
from labcoat._providers import extra_for, install_hint, installed

# Providers whose client is cheap to create and has no side effects (no server started,
# no weights loaded): creating one finds a missing key or setting now, not mid-run.
CREATE_TO_CHECK = (
    "openai",
    "anthropic",
    "google",
    "mistral",
    "groq",
    "grok",
    "together",
    "fireworks",
    "openrouter",
    "deepseek",
    "perplexity",
    "sambanova",
    "moonshot",
    "meta",
    "mockllm",
    "none",
    "labcoat",
    "openai-api",
)
# Providers that talk to a model server of the user's: (its URL variable, Inspect's
# default URL, or None when Inspect starts the server itself from a package)
SERVERS: dict[str, tuple[str, str | None, str | None]] = {
    "ollama": ("OLLAMA_BASE_URL", "http://localhost:11434/v1", None),
    "llama-cpp-python": ("LLAMA_CPP_PYTHON_BASE_URL", "http://localhost:8000/v1", None),
    "vllm": ("VLLM_BASE_URL", None, "vllm"),
    "vllm-completions": ("VLLM_BASE_URL", None, "vllm"),
    "sglang": ("SGLANG_BASE_URL", None, "sglang"),
}


def known_providers() -> list[str]:
    from inspect_ai._util.registry import registry_find, registry_unqualified_name

    import labcoat.agents._scripted  # noqa: F401  (labcoat/scripted, also outside Inspect)

    found = registry_find(lambda info: info.type == "modelapi")
    return sorted({registry_unqualified_name(o) for o in found})


def check_model(
    model: str, where: str | None = None, model_args: dict[str, Any] | None = None
) -> None:
    """One line naming the option (`where`, default `--model MODEL`) if Inspect could not
    run `model`."""
    where = where or f"--model {model}"
    name = model.strip()
    provider, slash, rest = name.partition("/")
    if not slash or not provider or not rest:
        raise LabcoatError(
            f"{where}: expected PROVIDER/MODEL, e.g. openai/gpt-5, "
            "anthropic/claude-sonnet-4-5 or labcoat/scripted (offline)"
        )
    known = known_providers()
    if provider not in known:
        raise LabcoatError(
            f"{where}: unknown model provider '{provider}' (known: {', '.join(known)})"
        )
    extra = extra_for(name)
    if extra is not None and not installed(extra):
        raise LabcoatError(
            f"{where}: the {provider} provider needs the {extra} package: " + install_hint(extra)
        )
    if provider in SERVERS:
        _check_server(where, provider, model_args or {})
        return
    if provider not in CREATE_TO_CHECK:
        return
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.model import get_model

    try:
        get_model(name, memoize=False, **(model_args or {}))
    except PrerequisiteError as ex:
        message = one_line(without_markup(ex.message)).removeprefix("ERROR: ")
        raise LabcoatError(f"{where}: {message}") from None
    except LabcoatError as ex:
        raise LabcoatError(f"{where}: {ex}") from None
    except Exception as ex:  # the provider's own complaint: a bad setting or argument
        raise LabcoatError(f"{where}: {type(ex).__name__}: {one_line(ex)}") from None


def _check_server(where: str, provider: str, model_args: dict[str, Any]) -> None:
    """A local model server must answer (or Inspect must be able to start one)."""
    variable, default, package = SERVERS[provider]
    url = model_args.get("base_url") or os.environ.get(variable) or default
    if url is None:
        if package is not None and importlib.util.find_spec(package) is None:
            raise LabcoatError(
                f"{where}: set {variable} to your {provider} server's URL (e.g. "
                f"http://127.0.0.1:8000/v1), or install {package} for Inspect to start one"
            )
        return
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "localhost", port), timeout=3).close()
    except OSError as ex:
        raise LabcoatError(
            f"{where}: no {provider} server answers at {url} ({ex.strerror or ex}); start "
            f"it, or set {variable}"
        ) from None

"""Model names checked before anything runs: a known provider, its package installed,
(for hosted APIs) a client Inspect can create, which is where a missing key shows, and
(for OpenAI-compatible ones) a server answering at any base URL the user set."""

from __future__ import annotations

import importlib.util
from typing import Any

from labcoat._errors import LabcoatError, one_line, without_markup
from labcoat._providers import OPENAI_COMPATIBLE, extra_for, install_hint, installed
from labcoat._run._preflight import INSPECT_BASE_URL_ENV, BaseUrl, check_answers, given_base_url

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
    "openai-api-completions",
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
    model: str,
    where: str | None = None,
    model_args: dict[str, Any] | None = None,
    base_url: str | None = None,
) -> None:
    """One line naming the option (`where`, default `--model MODEL`) if Inspect could not
    run `model`; `base_url` is `--model-base-url`'s."""
    where = where or f"--model {model}"
    model_args = model_args or {}
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
    if "base_url" in model_args:  # Inspect passes it to the provider as well: a clash
        raise LabcoatError(
            f"-M base_url: give the model's base URL as --model-base-url "
            f"{model_args['base_url']} (Inspect's option)"
        )
    extra = extra_for(name)
    if extra is not None and not installed(extra):
        raise LabcoatError(
            f"{where}: the {provider} provider needs the {extra} package: " + install_hint(extra)
        )
    if provider in SERVERS:
        _check_server(where, provider, base_url)
        return
    url = None
    if provider in CREATE_TO_CHECK:
        url = _created_base_url(where, name, model_args, base_url)
    if provider in OPENAI_COMPATIBLE:
        found = given_base_url(provider, url, base_url, _env_vars(provider, rest))
        if found is not None:
            check_answers(where, found)


def _created_base_url(
    where: str, name: str, model_args: dict[str, Any], base_url: str | None
) -> str | None:
    """Create the model's client as Inspect will (no request is made): a missing key or
    setting shows here; returns the base URL the client resolved, if any."""
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.model import get_model

    try:
        model = get_model(name, base_url=base_url, memoize=False, **model_args)
    except PrerequisiteError as ex:
        message = one_line(without_markup(ex.message)).removeprefix("ERROR: ")
        raise LabcoatError(f"{where}: {message}") from None
    except LabcoatError as ex:
        raise LabcoatError(f"{where}: {ex}") from None
    except Exception as ex:  # the provider's own complaint: a bad setting or argument
        raise LabcoatError(f"{where}: {type(ex).__name__}: {one_line(ex)}") from None
    url = getattr(model.api, "base_url", None)
    return str(url) if url else None


def _env_vars(provider: str, rest: str) -> tuple[str, ...]:
    """The variables an OpenAI-compatible provider reads its base URL from, as Inspect
    names them: `openai-api/SERVICE/...` reads SERVICE_BASE_URL."""
    service = rest.split("/", 1)[0] if provider.startswith("openai-api") else provider
    if provider in SERVERS:
        return (SERVERS[provider][0], INSPECT_BASE_URL_ENV)
    return (f"{service.upper().replace('-', '_')}_BASE_URL", INSPECT_BASE_URL_ENV)


def _check_server(where: str, provider: str, base_url: str | None) -> None:
    """A local model server must answer (or Inspect must be able to start one)."""
    variable, default, package = SERVERS[provider]
    found = given_base_url(provider, None, base_url, _env_vars(provider, ""))
    if found is None and default is not None:
        found = BaseUrl(default, f"{provider}'s default", f"set {variable}")
    if found is None:
        if package is not None and importlib.util.find_spec(package) is None:
            raise LabcoatError(
                f"{where}: set {variable} to your {provider} server's URL (e.g. "
                f"http://127.0.0.1:8000/v1), or install {package} for Inspect to start one"
            )
        return
    check_answers(where, found)

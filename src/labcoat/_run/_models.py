"""Model names checked before anything runs: a known provider, its package installed,
and (for hosted APIs) a client Inspect can create, which is where a missing key shows."""

from __future__ import annotations

from typing import Any

from labcoat._errors import LabcoatError, one_line
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
)


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
    if provider not in CREATE_TO_CHECK:
        return
    from inspect_ai._util.error import PrerequisiteError
    from inspect_ai.model import get_model

    try:
        get_model(name, memoize=False, **(model_args or {}))
    except PrerequisiteError as ex:
        raise LabcoatError(f"{where}: {one_line(ex.message).removeprefix('ERROR: ')}") from None
    except LabcoatError as ex:
        raise LabcoatError(f"{where}: {ex}") from None
    except Exception as ex:  # the provider's own complaint: a bad setting or argument
        raise LabcoatError(f"{where}: {type(ex).__name__}: {one_line(ex)}") from None

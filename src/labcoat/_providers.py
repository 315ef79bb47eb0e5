"""Which labcoat extra a model provider needs (`pip install 'labcoat[openai]'`).

Light on purpose (no Inspect import): `scripts/bootstrap.sh` asks it, before running a
command, which extras the command's `--model` options need and are not installed:

    python -m labcoat._providers missing-extras ARGS...
"""

from __future__ import annotations

import importlib.util
import sys

# extra -> the module its package provides (the extras themselves are in pyproject.toml)
EXTRA_MODULES: dict[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "google.genai",
    "mistral": "mistralai",
    "groq": "groq",
    "grok": "xai_sdk",
    "bedrock": "aiobotocore",
}

# Inspect provider (the part of a model name before the first /) -> labcoat extra
OPENAI_COMPATIBLE = (
    "openai",
    "openai-api",
    "openai-api-completions",
    "together",
    "fireworks",
    "moonshot",
    "meta",
    "litellm-proxy",
    "deepseek",
    "sambanova",
    "ollama",
    "openrouter",
    "perplexity",
    "llama-cpp-python",
    "vllm",
    "vllm-completions",
    "cloudflare",
    "sglang",
    "hf-inference-providers",
)
PROVIDER_EXTRAS: dict[str, str] = {
    **dict.fromkeys(OPENAI_COMPATIBLE, "openai"),
    "anthropic": "anthropic",
    "google": "google",
    "mistral": "mistral",
    "groq": "groq",
    "grok": "grok",
    "bedrock": "bedrock",
}

MODEL_OPTIONS = ("--model", "--model-role")


def extra_for(model: str) -> str | None:
    """The extra a model name (`openai/gpt-5`, or `ROLE=openai/gpt-5`) needs, if any."""
    name = model.partition("=")[2] if "=" in model else model
    return PROVIDER_EXTRAS.get(name.split("/", 1)[0].strip())


def installed(extra: str) -> bool:
    try:
        return importlib.util.find_spec(EXTRA_MODULES[extra]) is not None
    except ModuleNotFoundError:  # a parent package (google) is missing
        return False


def install_hint(extra: str) -> str:
    return f"pip install 'labcoat[{extra}]' (from a checkout: ./labcoat installs it)"


def models_in(args: list[str]) -> list[str]:
    """The model names given by --model/--model-role in a command line."""
    found = []
    for i, arg in enumerate(args):
        for option in MODEL_OPTIONS:
            if arg == option and i + 1 < len(args):
                found.append(args[i + 1])
            elif arg.startswith(option + "="):
                found.append(arg[len(option) + 1 :])
    return found


def missing_extras(args: list[str]) -> list[str]:
    extras = {extra_for(m) for m in models_in(args)}
    return sorted(e for e in extras if e is not None and not installed(e))


if __name__ == "__main__":
    if sys.argv[1:2] == ["missing-extras"]:
        print(" ".join(missing_extras(sys.argv[2:])))
    else:
        sys.exit("usage: python -m labcoat._providers missing-extras ARGS...")

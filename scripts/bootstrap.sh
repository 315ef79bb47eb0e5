#!/usr/bin/env bash
# Prepare a machine for labcoat: system packages (as root, when missing), a virtual
# environment in .venv, labcoat installed into it, and the model providers a command
# names. Safe to run again: it only does what is missing.
#   scripts/bootstrap.sh [--dev] [-- LABCOAT-ARGS...]
# With `-- ARGS`, the extras that ARGS' --model/--model-role need are installed too
# (e.g. labcoat[openai] for --model openai/gpt-5).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
extras=""
if [ "${1:-}" = "--dev" ]; then extras="[dev]"; shift; fi
if [ "${1:-}" = "--" ]; then shift; fi

say() { printf 'labcoat bootstrap: %s\n' "$*" >&2; }

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v git >/dev/null 2>&1 || need_apt+=(git)
if [ ! -x "$venv/bin/python" ]; then
    # Debian's python3 lacks ensurepip without python3-venv: try, once, before making .venv
    probe="$(mktemp -d)"
    python3 -m venv "$probe/venv" >/dev/null 2>&1 || need_apt+=(python3-venv)
    rm -rf "$probe"
fi
if [ -n "$extras" ] && ! command -v chromium >/dev/null 2>&1; then
    need_apt+=(chromium)  # the report's browser test drives Debian's Chromium
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing ${need_apt[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null \
            || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null; }
    else
        say "missing system packages: ${need_apt[*]} (install them, e.g. sudo apt-get install ${need_apt[*]})"
        exit 2
    fi
fi

if [ ! -x "$venv/bin/python" ]; then
    python3 - <<'PY' || { say "labcoat needs Python >= 3.11"; exit 2; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY
    say "creating $venv"
    python3 -m venv "$venv"
fi

# .labcoat-installed: labcoat itself; .labcoat-installed[dev]: with the test tools
stamp="$venv/.labcoat-installed$extras"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
    say "installing labcoat$extras into .venv (first run only)"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$root$extras"
    touch "$stamp" "$venv/.labcoat-installed"
fi

# the model providers the command names (--model openai/... needs labcoat[openai])
if [ $# -gt 0 ]; then
    missing="$("$venv/bin/python" -m labcoat._providers missing-extras "$@")"
    if [ -n "$missing" ]; then
        spec="$root[${missing// /,}]"
        say "installing the model provider packages: labcoat[${missing// /,}]"
        if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$spec"; then
            say "could not install them; run: $venv/bin/python -m pip install -e '$spec'"
            exit 2
        fi
    fi
fi

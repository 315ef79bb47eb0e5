#!/usr/bin/env bash
# labcoat's wheel and every wheel it and the image's extras need, in one folder (pip's own
# cache first, then PyPI), so that an image installs them with `pip --no-index`: nothing
# downloads when the image is built from them or when a container runs.
#   containers/wheelhouse.sh OUT_DIR
# The extras: labcoat's `ray` extra (the image is a Ray node: docs/scale.md's KubeRay
# recipe), numpy (the mini suite's task environments), pytest and pytest-xdist (the
# sandbox and integrity tests, run in a container against a checkout bound in).
# Setting: LABCOAT_IMAGE_PYTHON, the image's Python version (3.11.2: Debian bookworm's).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: containers/wheelhouse.sh OUT_DIR}"
python="${LABCOAT_PYTHON:-$root/.venv/bin/python}"
[ -x "$python" ] || python="$(command -v python3)"
say() { printf 'labcoat wheelhouse: %s\n' "$*" >&2; }

mkdir -p "$out"
rm -f "$out"/labcoat-*.whl
say "building labcoat's wheel from $root"
"$python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$out" "$root"
wheel="$(ls "$out"/labcoat-*.whl)"
say "collecting its dependencies into $out"
# resolved for the oldest Python the image may have (Debian bookworm's 3.11.2), as wheels
"$python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    --python-version "${LABCOAT_IMAGE_PYTHON:-3.11.2}" -d "$out" \
    "$wheel[ray]" numpy "pytest>=8,<10" "pytest-xdist>=3.5,<4" "openai>=3.4,<4"
say "$(ls "$out" | wc -l) wheels, $(du -sh "$out" | cut -f1)"

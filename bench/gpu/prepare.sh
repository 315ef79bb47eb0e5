#!/usr/bin/env bash
# Run HERE (a machine that reaches the package registries) before bench/gpu/check.sh runs
# on a GPU machine without network: it gathers what that machine lacks into
# bench/gpu/carry/ (git ignores it; the device tool carries it):
#   wheels/   labcoat and its dependencies for the GPU machine's Python, without what its
#             torch venv already has (torch, numpy, pandas, ...: they stay there)
#   debs/     Debian's bubblewrap, unpacked there with dpkg -x (no root needed)
#   bench/gpu/prepare.sh [PYTHON_VERSION (3.12)] [HAVE_FILE]
# HAVE_FILE lists the distributions the GPU machine already has, one per line (default:
# bench/gpu/have.txt, measured there: ../shared/gpu-device-notes.md); bench/gpu/omit.txt
# those not carried at all (not needed offline, too large).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version="${1:-3.12}"
have="${2:-$root/bench/gpu/have.txt}"
carry="$root/bench/gpu/carry"
pip=("$root/.venv/bin/python" -m pip)
say() { printf 'gpu prepare: %s\n' "$*" >&2; }

rm -rf "$carry" && mkdir -p "$carry/wheels" "$carry/debs"
say "labcoat's wheel"
"${pip[@]}" wheel --no-deps -q -w "$carry/wheels" "$root" >/dev/null
# every dependency, as binary wheels for that Python on manylinux x86_64
say "dependencies for Python $version"
"${pip[@]}" download -q --only-binary=:all: --python-version "$version" \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any \
    -d "$carry/all" "$carry/wheels"/labcoat-*.whl 2>&1 | grep -v "^WARNING: Location" >&2 || true
# leave out what the GPU machine has (its torch venv's packages), keep the rest
python3 - "$carry/all" "$carry/wheels" "$have" "$root/bench/gpu/omit.txt" <<'PY'
import re, shutil, sys
from pathlib import Path
source, target, *lists = map(Path, sys.argv[1:])
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
have = {norm(line.split("==")[0].strip()) for f in lists for line in f.read_text().splitlines()
        if line.strip() and not line.startswith("#")}
kept = left = 0
for wheel in sorted(source.glob("*.whl")):
    if norm(wheel.name.split("-")[0]) in have:
        left += 1
    else:
        shutil.copy(wheel, target / wheel.name)
        kept += 1
print(f"gpu prepare: {kept} wheels carried, {left} left to the GPU machine", file=sys.stderr)
PY
rm -rf "$carry/all"
# botocore without its service models (15 of its 16 MB): Inspect imports only its
# exceptions, and nothing reaches S3 from a machine without network
python3 - "$carry/wheels" <<'PY'
import sys, zipfile
from pathlib import Path
for wheel in Path(sys.argv[1]).glob("botocore-*.whl"):
    slim = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            parts = item.filename.split("/")
            if parts[:2] == ["botocore", "data"] and len(parts) > 3:
                continue  # data/<service>/<version>/...: a service's model
            out.writestr(item, source.read(item))
    slim.replace(wheel)
PY
say "bubblewrap's .deb"
(cd "$carry/debs" && apt-get download -q bubblewrap >/dev/null 2>&1) \
    || { apt-get update -qq >/dev/null 2>&1; (cd "$carry/debs" && apt-get download -q bubblewrap >/dev/null); }
du -sh "$carry" | awk '{print "gpu prepare: " $1 " to carry (the device tool carries 64 MiB at most)"}' >&2

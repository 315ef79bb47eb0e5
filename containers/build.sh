#!/usr/bin/env bash
# labcoat's node image from containers/Dockerfile (a registry's base image, or any
# Debian-based image already in the engine: BASE=...).
#   containers/build.sh [TAG]          (default labcoat-node:latest)
# Settings (environment): BASE (the FROM image, python:3.11-slim-bookworm),
# LABCOAT_IMAGE_BUILD (work folder, /var/tmp/labcoat-image), DOCKER_BUILD_ARGS (added
# to `docker build`, e.g. "--network host" where the engine's bridge has no NAT).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${1:-labcoat-node:latest}"
work="${LABCOAT_IMAGE_BUILD:-/var/tmp/labcoat-image}"
base="${BASE:-python:3.11-slim-bookworm}"
say() { printf 'labcoat image: %s\n' "$*" >&2; }

"$root/containers/wheelhouse.sh" "$work/wheels"
context="$work/context"
rm -rf "$context"
mkdir -p "$context"
cp -al "$work/wheels" "$context/wheels" 2>/dev/null || cp -a "$work/wheels" "$context/wheels"
cp "$root/containers/image-setup.sh" "$context/"
say "docker build FROM $base -> $tag"
# shellcheck disable=SC2086
docker build ${DOCKER_BUILD_ARGS:-} -f "$root/containers/Dockerfile" --build-arg "BASE=$base" -t "$tag" "$context"
say "built $tag"

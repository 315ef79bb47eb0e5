#!/usr/bin/env bash
# labcoat's node image without a registry: a Debian root file system from Debian's apt
# (mmdebstrap, minbase), labcoat and its dependencies from a wheelhouse
# (containers/wheelhouse.sh), two ordinary users, then `docker import`.
#   containers/build-offline.sh [TAG]      (default labcoat-node:offline; needs root)
# In the image:
#   /opt/labcoat-venv      labcoat (its `labcoat` on PATH), numpy, pytest
#   /usr/share/labcoat/wheels and /etc/pip.conf (no-index, find-links there): pip installs
#                          offline, so the mini suite's task environments build with no network
#   lab      uid 1000, a subordinate id range  -> rootless with separate users
#   lab-one  uid 1001, none                     -> rootless, one user
# Settings (environment): LABCOAT_IMAGE_BUILD (work folder, /var/tmp/labcoat-image),
# LABCOAT_DEBIAN_MIRROR (the mirror mmdebstrap uses; default: the host's apt sources).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${1:-labcoat-node:offline}"
work="${LABCOAT_IMAGE_BUILD:-/var/tmp/labcoat-image}"
say() { printf 'labcoat image: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { say "needs root (mmdebstrap unpacks packages as their owners)"; exit 2; }
command -v mmdebstrap >/dev/null || { say "install mmdebstrap: apt-get install mmdebstrap"; exit 2; }
command -v docker >/dev/null || { say "no docker CLI (apt-get install docker.io)"; exit 2; }

"$root/containers/wheelhouse.sh" "$work/wheels"

# what labcoat's modes use: bwrap; newuidmap/newgidmap (uidmap) for separate users;
# fuse2fs and fusermount3 (fuse3) for the disk quota; git (RE-Bench task folders, tests);
# procps and util-linux's runuser for graders; passwd for the users
packages=python3,python3-venv,bubblewrap,uidmap,fuse2fs,fuse3,git,procps,ca-certificates,passwd,util-linux
mirror=()
[ -n "${LABCOAT_DEBIAN_MIRROR:-}" ] && mirror=("$LABCOAT_DEBIAN_MIRROR")
tar="$work/rootfs.tar"
say "mmdebstrap bookworm ($packages) -> $tar"
mmdebstrap --variant=minbase --include="$packages" \
    --customize-hook="mkdir -p \"\$1/usr/share/labcoat\"" \
    --customize-hook="copy-in \"$work/wheels\" /usr/share/labcoat" \
    --customize-hook="$root/containers/image-setup.sh \"\$1\"" \
    bookworm "$tar" "${mirror[@]}"

say "docker import -> $tag"
docker import \
    --change 'ENV PATH=/opt/labcoat-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /root' \
    --change 'CMD ["/bin/bash"]' \
    --message "labcoat $(cd "$root" && git describe --always --dirty 2>/dev/null || echo unknown), offline build" \
    "$tar" "$tag" >/dev/null
rm -f "$tar"
say "built $tag ($(docker image inspect "$tag" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}'))"

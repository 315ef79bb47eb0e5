#!/usr/bin/env bash
# What both builds do inside the image's root file system, once its packages are in:
# labcoat's venv from the wheelhouse at /usr/share/labcoat/wheels, pip pointed there for
# good (offline task environments), FUSE for ordinary users, and the two users.
#   containers/image-setup.sh TARGET   (TARGET /: run inside the image, as the Dockerfile does)
set -euo pipefail
target="${1:?usage: image-setup.sh TARGET}"
# a clean environment: the builder's PIP_* settings (its indexes, its find-links) are not the image's
in_target() {
    if [ "$target" = / ]; then env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
    else env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$target" "$@"; fi
}

in_target python3 -m venv /opt/labcoat-venv
in_target /opt/labcoat-venv/bin/pip install -q --disable-pip-version-check --no-index \
    --find-links /usr/share/labcoat/wheels "labcoat[ray]" numpy pytest pytest-xdist openai
cat > "$target/etc/pip.conf" <<'CONF'
# labcoat's image: task environments install from the wheels built into it, offline
[global]
no-index = true
find-links = /usr/share/labcoat/wheels
disable-pip-version-check = true
CONF
# the mapped root of a separate-users sandbox must see into its user's FUSE disk
grep -qx user_allow_other "$target/etc/fuse.conf" 2>/dev/null || echo user_allow_other >> "$target/etc/fuse.conf"
# lab: an ordinary user with a subordinate range; lab-one: a system user, none
in_target useradd --uid 1000 --create-home --shell /bin/bash lab
grep -q '^lab:' "$target/etc/subuid" 2>/dev/null || in_target usermod --add-subuids 100000-165535 --add-subgids 100000-165535 lab
in_target useradd --system --uid 1001 --create-home --shell /bin/bash lab-one
sed -i '/^lab-one:/d' "$target/etc/subuid" "$target/etc/subgid"

#!/usr/bin/env bash
# A Docker engine for labcoat's container tests, on a machine without one running:
# Debian's docker.io (dockerd 20.10) started by hand, with what it needs where the
# machine is itself a VM or container without systemd (docs/containers.md#the-engine).
#   containers/engine.sh start    start dockerd unless an engine already answers; prints
#                                 the DOCKER_HOST to use and the settings it needed
#   containers/engine.sh stop     stop the dockerd this script started
#   containers/engine.sh status   exit 0 when an engine answers
# Settings (environment): LABCOAT_DOCKER_ROOT (data root, /var/lib/labcoat-docker),
# LABCOAT_DOCKER_SOCK (unix socket, /run/labcoat-docker.sock).
set -euo pipefail
say() { printf 'labcoat engine: %s\n' "$*" >&2; }

data_root="${LABCOAT_DOCKER_ROOT:-/var/lib/labcoat-docker}"
sock="${LABCOAT_DOCKER_SOCK:-/run/labcoat-docker.sock}"
pidfile="/run/labcoat-dockerd.pid"
log="/var/log/labcoat-dockerd.log"
host="unix://$sock"

answers() { DOCKER_HOST="$host" timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start() {
    if answers; then
        say "an engine answers at $host"
        echo "export DOCKER_HOST=$host"
        return 0
    fi
    [ "$(id -u)" = 0 ] || { say "needs root (it starts dockerd)"; exit 2; }
    if ! command -v dockerd >/dev/null 2>&1; then
        say "installing docker.io (Debian's dockerd) from apt"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io iptables >/dev/null \
            || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io iptables >/dev/null; }
    fi
    mkdir -p "$data_root"
    local args=(--data-root "$data_root" --host "$host" --pidfile "$pidfile"
        --exec-root /run/labcoat-docker --exec-opt native.cgroupdriver=cgroupfs)
    # overlay2 where the kernel stacks it on the data root's file system, else vfs (a copy
    # per layer: slow, but works on any file system)
    if grep -qw overlay /proc/filesystems; then
        args+=(--storage-driver overlay2)
    else
        args+=(--storage-driver vfs)
    fi
    # the default bridge needs iptables' NAT; where the kernel refuses it, no bridge and no
    # iptables (containers then get loopback only, which labcoat's tests need)
    if ! iptables -t nat -L -n >/dev/null 2>&1; then
        args+=(--iptables=false --ip6tables=false --bridge=none)
    fi
    say "starting dockerd ${args[*]} (log: $log)"
    nohup dockerd "${args[@]}" >"$log" 2>&1 &
    for _ in $(seq 60); do
        answers && break
        sleep 1
    done
    if ! answers; then
        say "dockerd did not answer within 60 s; its log ends:"
        tail -n 15 "$log" >&2
        exit 1
    fi
    say "engine $(DOCKER_HOST="$host" docker version --format '{{.Server.Version}}') at $host, storage $(DOCKER_HOST="$host" docker info --format '{{.Driver}}'), cgroup $(DOCKER_HOST="$host" docker info --format '{{.CgroupVersion}}')"
    echo "export DOCKER_HOST=$host"
}

stop() {
    if [ -f "$pidfile" ]; then
        local pid
        pid="$(cat "$pidfile")"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
        say "stopped dockerd $pid"
    else
        say "no dockerd started by this script"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) answers && echo "export DOCKER_HOST=$host" ;;
    *) say "usage: containers/engine.sh start|stop|status"; exit 2 ;;
esac

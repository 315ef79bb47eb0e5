"""`labcoat check` inside labcoat's node image, in a real Docker engine, started with each
configuration that withholds a permission bwrap needs: it prints that permission in one
line with its Docker and Kubernetes remedy and exits 2, and `validate` refuses to start
in one line. The checkout's own source is mounted over the image's labcoat, so what is
tested is this tree.

Needs a Docker engine and the image (`containers/engine.sh start`,
`containers/build-offline.sh`); skips with that reason where there is none. The AppArmor
and cgroup v2 configurations need an engine on such a host: they skip, saying so, where
the engine's host has neither (the unit tests in tests/test_check_cmd.py cover them).
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

engine = pytest.importorskip(
    "docker_engine", reason="tests/containers/docker_engine.py (the engine's helper) is missing"
)
IMAGE, REPO, docker, unavailable = engine.IMAGE, engine.REPO, engine.docker, engine.unavailable

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))

SECCOMP = ("--security-opt", "seccomp=unconfined")
SYSTEMPATHS = ("--security-opt", "systempaths=unconfined")
SYS_ADMIN = ("--cap-add", "SYS_ADMIN")
MISSING = "labcoat check: missing in this container: "
# max_user_namespaces is a limit of each user namespace: one of our own with it at 0
# refuses every namespace made inside it, as the sysctl does on a host (the host's own
# stays as it is); inside it the check is that namespace's root, asking for one user
NO_USERNS = (
    "unshare --user --map-root-user sh -c "
    "'echo 0 > /proc/sys/user/max_user_namespaces && exec python -m labcoat check'"
)


def in_container(
    options: tuple[str, ...], command: str = "python -m labcoat check", user: str = "root"
) -> subprocess.CompletedProcess[str]:
    return docker(
        "run", "--rm", "--network", "none", "--user", user, *options,
        "-v", f"{REPO / 'src'}:/labcoat-src:ro", "-e", "PYTHONPATH=/labcoat-src",
        "-e", "LABCOAT_UNSAFE_ROOT_ONE_USER=1",
        IMAGE, "sh", "-c", command,
        timeout=600,
    )  # fmt: skip


def missing_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith(MISSING)]


def _engine_info(template: str) -> str:
    return docker("info", "--format", template, timeout=30).stdout.strip()


CASES = {
    "defaults": ((), "python -m labcoat check", "root"),
    "defaults, an ordinary user": ((), "python -m labcoat check", "lab"),
    # one user (lab-one): the measured least privilege is seccomp and system paths
    "seccomp unconfined": (SECCOMP, "python -m labcoat check", "lab-one"),
    "all it needs": ((*SECCOMP, *SYSTEMPATHS), "python -m labcoat check", "lab-one"),
    # root's mode makes its namespaces without a user namespace: two capabilities
    "root, seccomp unconfined": (SECCOMP, "python -m labcoat check", "root"),
    "root, + SYS_ADMIN": ((*SECCOMP, *SYS_ADMIN), "python -m labcoat check", "root"),
    "root, all it needs": (
        (*SECCOMP, *SYS_ADMIN, "--cap-add", "NET_ADMIN"),
        "python -m labcoat check",
        "root",
    ),
    "no user namespaces": (
        (*SECCOMP, *SYSTEMPATHS, "-e", "LABCOAT_SANDBOX_MODE=one-user"),
        NO_USERNS,
        "root",
    ),
    "validate, defaults": ((), "python -m labcoat validate mini --log-dir /tmp/logs", "root"),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """Each configuration's run, started together (each container takes a minute here)."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        started = {name: pool.submit(in_container, *case) for name, case in CASES.items()}
        return {name: future.result() for name, future in started.items()}


def _one(runs: dict[str, subprocess.CompletedProcess[str]], name: str) -> str:
    done = runs[name]
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    [line] = missing_lines(done)
    return line.removeprefix(MISSING)


def test_docker_s_default_seccomp_profile_is_named(runs: dict) -> None:
    for name in ("defaults", "defaults, an ordinary user"):
        line = _one(runs, name)
        assert line.startswith("the seccomp profile refuses unshare/clone of namespaces (bwrap: ")
        assert "Docker: `--security-opt seccomp=unconfined`" in line
        assert "Kubernetes: `securityContext.seccompProfile.type: Unconfined`" in line


def test_masked_proc_paths_are_named(runs: dict) -> None:
    line = _one(runs, "seccomp unconfined")
    assert line.startswith("masked /proc paths (/proc/")
    assert "Can't mount proc" in line
    assert "Docker: `--security-opt systempaths=unconfined`" in line
    assert (
        "Kubernetes: `securityContext.procMount: Unmasked` (with the pod's `hostUsers: false`)"
        in line
    )


def test_root_s_missing_capabilities_are_named(runs: dict) -> None:
    line = _one(runs, "root, seccomp unconfined")
    assert "needs CAP_SYS_ADMIN" in line and "Docker: `--cap-add SYS_ADMIN`" in line
    assert "Kubernetes: `securityContext.capabilities.add: [SYS_ADMIN]`" in line
    line = _one(runs, "root, + SYS_ADMIN")
    assert "needs CAP_NET_ADMIN" in line and "Docker: `--cap-add NET_ADMIN`" in line


def test_with_all_it_needs_nothing_is_missing(runs: dict) -> None:
    for name in ("all it needs", "root, all it needs"):
        done = runs[name]
        assert done.returncode == 0, done.stdout + done.stderr
        assert missing_lines(done) == []
        assert (
            "labcoat check: in a container (/.dockerenv): it gives the sandbox all it needs"
            in done.stderr
        )


def test_no_user_namespaces_are_named(runs: dict) -> None:
    line = _one(runs, "no user namespaces")
    assert line.startswith("user namespaces are refused here: user.max_user_namespaces is 0")
    assert "Docker: as root on the host, `sysctl -w user.max_user_namespaces=15000`" in line
    assert "Kubernetes: as root on the node, the same sysctl" in line


def test_validate_refuses_to_start_in_one_line(runs: dict) -> None:
    done = runs["validate, defaults"]
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(
        "labcoat: error: no sandbox can start in this container: the seccomp profile refuses"
    )
    assert "seccomp=unconfined" in line and "seccompProfile.type: Unconfined" in line


def test_an_apparmor_profile_refusing_mounts_is_named() -> None:
    if "apparmor" not in _engine_info("{{json .SecurityOptions}}"):
        pytest.skip("the engine's host has no AppArmor (docker info: Security Options)")
    done = in_container((*SECCOMP, *SYSTEMPATHS))
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = missing_lines(done)
    assert "AppArmor profile docker-default" in line
    assert "Docker: `--security-opt apparmor=unconfined`" in line
    assert "Kubernetes: `securityContext.appArmorProfile.type: Unconfined`" in line


def test_cgroup_v2_without_delegation_is_named() -> None:
    if _engine_info("{{.CgroupVersion}}") != "2":
        pytest.skip("the engine's host has cgroup v1, not v2 (docker info: Cgroup Version)")
    done = in_container((*SECCOMP, *SYSTEMPATHS))
    assert done.returncode == 0, done.stdout + done.stderr
    weaker = [line for line in done.stderr.splitlines() if "weaker in this container" in line]
    assert len(weaker) == 1 and "cgroup v2 without delegation" in weaker[0]
    assert "Docker: " in weaker[0] and "Kubernetes: " in weaker[0]

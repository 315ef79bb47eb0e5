"""`labcoat check`: preflight problems, one line each, before any run."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import run_cli_captured

from labcoat._cli import check_cmd
from labcoat._run._check import NEEDS_NETWORK, docker_engine_problem
from labcoat.sandbox import (
    _container,
    _environment,
    _limits,
    index_reachable,
    limits_here,
    namespaces_refused,
)

UPSTREAM = Path(__file__).parent / "researchgym" / "data" / "upstream-task"
POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 12345\n"
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_environment, "_failures", {})


def test_mini_is_ready(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli_captured(capsys, "check", "mini")
    assert code == 0, out + err
    assert out == ""
    assert "10 task(s)" in err and "no problems found" in err
    # what every task's sandbox gets on this machine, and why when it is no cgroup
    [machine] = [line for line in err.splitlines() if "this machine:" in line]
    assert "memory and process limits by " in machine and "GPU" in machine


def test_the_limits_mechanism_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABCOAT_SANDBOX_CGROUPS", "0")
    assert limits_here() == "rlimits per process (LABCOAT_SANDBOX_CGROUPS=0)"
    monkeypatch.delenv("LABCOAT_SANDBOX_CGROUPS")
    here = limits_here()
    assert here.startswith("cgroup v") or here.startswith("rlimits per process (cgroup v2: ")


def test_a_cgroup_v2_without_the_memory_controller_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on the Firecracker H100 machine: v2 is mounted, the parent lacks memory and pids
    (the kernel refuses to enable them with an ENOENT that names no file)."""
    root = tmp_path / "cgroup"
    (root / "labcoat.slice").mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu io\n")
    (root / "labcoat.slice" / "cgroup.controllers").write_text("cpu io\n")
    (root / "labcoat.slice" / "cgroup.subtree_control").write_text("\n")
    monkeypatch.setattr(_limits, "CGROUP_ROOT", root)
    monkeypatch.setattr(_limits, "_own_cgroup_path", lambda controller: "/labcoat.slice")
    here = limits_here()
    assert here.startswith("rlimits per process (cgroup v2: no memory or pids controller in ")
    assert f"{root}/labcoat.slice/cgroup.controllers (cpu io)" in here
    # nothing made there is left
    assert not any(p.name.startswith("labcoat-probe") for p in (root / "labcoat.slice").iterdir())


def test_every_problem_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(UPSTREAM, tasks / "pointers")
    (tasks / "pointers" / "data.csv").write_text(POINTER)
    shutil.copytree(UPSTREAM, tasks / "unbuildable")
    (tasks / "unbuildable" / "requirements.txt").write_text(
        "git+https://labcoat-test.invalid/x.git#egg=x\n"
    )
    code, out, err = run_cli_captured(capsys, "check", str(tasks), "--family", "researchgym")
    assert code == 2
    lines = out.splitlines()
    assert any(
        line.startswith("pointers (researchgym): lfs: ")
        and "data.csv" in line
        and "git lfs pull" in line
        for line in lines
    ), lines
    if index_reachable():
        assert any(
            line.startswith("unbuildable (researchgym): environment: ")
            and "labcoat-test.invalid" in line
            for line in lines
        ), lines
    else:  # pip is told to use no index here (a container's /etc/pip.conf): its own kind
        network = f"unbuildable (researchgym): network: {NEEDS_NETWORK}: "
        assert any(line.startswith(network) for line in lines), lines
    assert "Traceback" not in out + err
    # without building, the environment goes unchecked
    code, out, _ = run_cli_captured(
        capsys, "check", str(tasks), "--family", "researchgym", "--no-build"
    )
    assert code == 2 and "environment" not in out


def test_list_reports_a_broken_family_and_lists_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from labcoat.suites import SUITES_DIR

    suite = tmp_path / "suite"
    shutil.copytree(SUITES_DIR / "mini" / "researchgym", suite / "researchgym")
    shutil.copytree(SUITES_DIR / "mini" / "paperbench", suite / "paperbench")
    broken = next((suite / "paperbench").rglob("config.yaml"))
    broken.write_bytes(b"id: [unclosed\n")
    code, out, err = run_cli_captured(capsys, "list", str(suite))
    assert code == 2
    assert "class-incremental" in out and "ts-attribution" in out
    [line] = [line for line in err.splitlines() if line.strip()]
    assert line.startswith("labcoat: error: paperbench task ") and "config.yaml: line 2" in line


def test_without_an_index_an_unbuildable_environment_needs_the_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An air-gapped machine: check says which tasks would need the network."""
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip's settings are read again for it
    tasks = tmp_path / "tasks"
    shutil.copytree(UPSTREAM, tasks / "online-only")
    (tasks / "online-only" / "requirements.txt").write_text("labcoat-not-in-any-wheelhouse\n")
    code, out, err = run_cli_captured(capsys, "check", str(tasks), "--family", "researchgym")
    assert code == 2, out + err
    [line] = [line for line in out.splitlines() if ": network: " in line]
    assert line.startswith("online-only (researchgym): network: its environment needs packages")
    assert "labcoat-not-in-any-wheelhouse" in line


def test_in_its_own_v2_cgroup_labcoat_moves_into_a_leaf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delegated cgroup (a systemd scope with Delegate=yes, a container's) holds the
    harness itself, so the kernel refuses controllers for its children (EBUSY) until the
    harness lives in a leaf; samples then go beside that leaf. The kernel's two rules are
    played by a stand-in for the cgroup files (this machine has no cgroup v2 to write)."""
    root = tmp_path / "cgroup"
    scope = root / "user.slice" / "labcoat.scope"
    scope.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (scope / "cgroup.controllers").write_text("cpu memory pids\n")
    (scope / "cgroup.subtree_control").write_text("\n")
    me = str(os.getpid())
    (scope / "cgroup.procs").write_text(f"{me}\n")
    real_write = _limits._write

    def kernel(path: Path, text: str) -> None:
        if (
            path.name == "cgroup.subtree_control"
            and me in (path.parent / "cgroup.procs").read_text()
        ):
            error = OSError(f"writing {text!r} to {path}: Device or resource busy")
            error.errno = errno.EBUSY
            raise error
        if path.name == "cgroup.procs":  # a move: the process leaves its old cgroup
            (scope / "cgroup.procs").write_text("")
        if path.name == "cgroup.subtree_control":
            text = " ".join(c.lstrip("+") for c in text.split())
        real_write(path, text)

    own = {"path": "/user.slice/labcoat.scope"}
    monkeypatch.setattr(_limits, "_write", kernel)
    monkeypatch.setattr(_limits, "CGROUP_ROOT", root)
    monkeypatch.setattr(_limits, "_own_cgroup_path", lambda controller: own["path"])
    group = _limits.create_cgroup("labcoat-sample-x", _limits.Wanted(memory_mb=64, pids=64))
    assert group is not None and group.kind == "v2"
    assert group.dirs == [scope / "labcoat-sample-x"]
    assert (scope / "labcoat-sample-x" / "memory.max").read_text() == str(64 << 20)
    assert (scope / _limits.HARNESS_LEAF / "cgroup.procs").read_text() == me
    # once in the leaf, samples still go beside it, not under it
    own["path"] = f"/user.slice/labcoat.scope/{_limits.HARNESS_LEAF}"
    again = _limits.create_cgroup("labcoat-sample-y", _limits.Wanted(memory_mb=64, pids=64))
    assert again is not None and again.dirs == [scope / "labcoat-sample-y"]
    assert _limits.existing_cgroup("labcoat-sample-y") == again


def test_private_overlays_mount_here_and_a_refusal_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe mounts a real overlay as whoever runs the tests (Linux 5.11+ lets an
    ordinary user); where the launcher falls back to a bind, `check` names the channel."""
    from labcoat.sandbox import _guarantees

    _guarantees.overlay_problem.cache_clear()
    assert _guarantees.overlay_problem() is None
    monkeypatch.setattr(_guarantees, "overlay_problem", lambda: "/x is shared (overlay: EPERM)")
    weaker = _guarantees.guarantees_here().weaker
    assert any(line.startswith("shared read-only trees are bound, not overlaid") for line in weaker)
    # only root makes a sample's own /dev nodes
    assert any("/dev nodes" in line for line in weaker) == (os.geteuid() != 0)


def test_without_a_target_check_says_what_this_machine_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`labcoat check` as the README writes it: the machine alone, no task loaded."""
    code, out, err = run_cli_captured(capsys, "check")
    assert code == (2 if namespaces_refused() else 0), out + err
    assert any("this machine: isolation " in line for line in err.splitlines()), err
    assert "no TARGET: this machine only" in err and "task(s)" not in err
    # a selection needs the tasks it selects from
    code, _, err = run_cli_captured(capsys, "check", "--task", "prefix_sum/main")
    assert code == 2 and "give one" in err and "Traceback" not in err


def _cgroup_v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cgroup v1 machine whose hierarchies this process may not write: this process's
    own memory and pids cgroups are another user's folders (0555). Root passes mode bits,
    so for root the kernel's refusal is played by a stand-in for mkdir there."""
    root = tmp_path / "cgroup"
    for controller in ("memory", "pids"):
        (root / controller / "someone").mkdir(parents=True)
        (root / controller / "cgroup.procs").write_text("")
        (root / controller / "someone").chmod(0o555)
    monkeypatch.setattr(_limits, "CGROUP_ROOT", root)
    monkeypatch.setattr(_limits, "_own_cgroup_path", lambda controller: "/someone")
    if os.geteuid() == 0:
        real_mkdir = os.mkdir

        def kernel(path: str | os.PathLike[str], mode: int = 0o777) -> None:
            if str(path).startswith(str(root)):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            real_mkdir(path, mode)

        monkeypatch.setattr(os, "mkdir", kernel)
    return root


def test_on_cgroup_v1_an_ordinary_user_is_told_what_is_true(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No v2 remedy (systemd-run's Delegate=yes) where the cgroups are v1, and the refusal
    as a sentence, not an errno's repr. (scripts/test-as-users.sh runs it as ordinary
    users, where the refusal is the kernel's own.)"""
    from labcoat.sandbox import _guarantees

    root = _cgroup_v1(tmp_path, monkeypatch)
    here = _guarantees.guarantees_here()
    assert here.limits.startswith("rlimits per process (cgroup v2: not mounted at "), here.limits
    assert "(this machine's cgroups are v1)" in here.limits
    assert f"may not make cgroups in {root}/memory/someone (it belongs to " in here.limits
    assert "Errno" not in here.limits and "Permission denied" not in here.limits
    [line] = [w for w in here.weaker if w.startswith("memory and process limits")]
    assert "cgroups are v1" in line and "cgexec -g memory,pids:labcoat-" in line, line
    assert "systemd-run" not in line and "Delegate" not in line


def test_forced_one_user_mode_says_what_chose_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user whose subordinate range would give separate users, with one-user asked for:
    the one-user line names the setting, not `None`."""
    from labcoat.sandbox import _guarantees

    monkeypatch.setenv("LABCOAT_SANDBOX_MODE", "one-user")
    monkeypatch.setattr(_guarantees, "mapping_problem", lambda: None)
    cause = _guarantees._one_user_cause()
    assert cause.startswith("LABCOAT_SANDBOX_MODE=one-user chose this mode"), cause
    assert "None" not in cause


def test_validate_says_which_guarantee_one_user_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verdicts from one-user sandboxes come with one line naming what does not hold
    (the runs are left out: the line is about the machine, not the tasks)."""
    from labcoat._cli import validate_cmd
    from labcoat.sandbox import _guarantees
    from labcoat.sandbox._layout import Isolation

    monkeypatch.setattr(validate_cmd, "run_entries", lambda *args, **kwargs: ([], []))
    argv = ("validate", "mini", "--task", "prefix_sum/main", "--log-dir", str(tmp_path / "logs"))
    monkeypatch.setattr(_guarantees, "isolation", lambda: Isolation.ROOT)
    _, _, err = run_cli_captured(capsys, *argv)
    assert "isolation" not in err, err
    monkeypatch.setattr(_guarantees, "isolation", lambda: Isolation.ONE_USER)
    _, _, err = run_cli_captured(capsys, *argv)
    [line] = [line for line in err.splitlines() if line.startswith("labcoat validate: isolation")]
    assert "rootless-one-user: graders and the agent's code are one uid" in line, line


# -- inside a container: each permission it withholds, with both remedies (issue 47) --

MASKED = "\n".join(
    f"{n} 30 0:5 /null {p} ro,nosuid - devtmpfs udev rw"
    for n, p in enumerate(("/proc/kcore", "/proc/keys", "/proc/timer_list"), start=400)
)
NO_NAMESPACE = "No permissions to create new namespace, likely because the kernel does not allow"
NO_PROC = "Can't mount proc on /newroot/proc: Operation not permitted"


def _facts(**given: object) -> _container.ContainerFacts:
    return _container.ContainerFacts(
        **{"signal": "a container (/.dockerenv)", "root": True, **given}
    )  # type: ignore[arg-type]


def _only(facts: _container.ContainerFacts) -> _container.Missing:
    [missing] = _container.missing_permissions(facts)
    assert "\n" not in missing.line()
    return missing


def test_docker_default_seccomp_is_named_with_both_remedies() -> None:
    missing = _only(_facts(namespaces=NO_NAMESPACE, seccomp=True))
    assert missing.kind == "seccomp" and missing.fatal
    line = missing.line()
    assert line.startswith("the seccomp profile refuses unshare/clone of namespaces (bwrap: No")
    assert "Docker: `--security-opt seccomp=unconfined`" in line
    assert "Kubernetes: `securityContext.seccompProfile.type: Unconfined`" in line


def test_masked_proc_paths_are_named_with_both_remedies() -> None:
    masked = _container.masked_proc_paths(MASKED + "\n22 27 0:21 / /proc rw - proc proc rw")
    assert masked == ("/proc/kcore", "/proc/keys", "/proc/timer_list")  # not /proc itself
    missing = _only(_facts(proc_mount=NO_PROC, masked=masked, seccomp=False))
    assert missing.kind == "systempaths"
    line = missing.line()
    assert line.startswith("masked /proc paths (/proc/kcore, /proc/keys, /proc/timer_list)")
    assert NO_PROC in line
    assert "Docker: `--security-opt systempaths=unconfined`" in line
    assert (
        "Kubernetes: `securityContext.procMount: Unmasked` (with the pod's `hostUsers: false`)"
        in line
    )


def test_an_apparmor_profile_refusing_mounts_is_named_with_both_remedies() -> None:
    refused = "Can't mount proc on /newroot/proc: Permission denied"
    missing = _only(_facts(proc_mount=refused, apparmor="docker-default (enforce)"))
    assert missing.kind == "apparmor"
    line = missing.line()
    assert line.startswith("AppArmor profile docker-default (enforce) refuses mounts")
    assert "Docker: `--security-opt apparmor=unconfined`" in line
    assert "Kubernetes: `securityContext.appArmorProfile.type: Unconfined`" in line
    # both at once: both named, one line each
    both = _container.missing_permissions(
        _facts(proc_mount=refused, apparmor="docker-default (enforce)", masked=("/proc/kcore",))
    )
    assert [m.kind for m in both] == ["systempaths", "apparmor"]


def test_no_user_namespaces_are_named_with_both_remedies() -> None:
    missing = _only(_facts(root=False, namespaces=NO_NAMESPACE, max_user_namespaces="0"))
    assert missing.kind == "userns" and missing.fatal
    line = missing.line()
    assert line.startswith("user namespaces are refused here: user.max_user_namespaces is 0")
    assert "Docker: as root on the host, `sysctl -w user.max_user_namespaces=15000`" in line
    assert "Kubernetes: as root on the node, the same sysctl" in line
    # the host's words name it in a run's refusal (with --sandbox docker), not these
    assert _refused_with([missing]) is None


def test_cgroup_v2_without_delegation_is_weaker_not_fatal() -> None:
    limits = "rlimits per process (cgroup v2: /sys/fs/cgroup is read-only)"
    missing = _only(_facts(cgroup="v2", limits=limits))
    assert missing.kind == "cgroup" and not missing.fatal
    line = missing.line()
    assert line.startswith("cgroup v2 without delegation")
    assert "Docker: " in line and "Kubernetes: " in line and "resources.limits" in line
    assert _container.missing_permissions(_facts(cgroup="v1", limits=limits)) == []
    assert (
        _container.missing_permissions(_facts(cgroup="v2", limits="cgroup v2 (memory, pids)")) == []
    )
    assert _refused_with([missing]) is None


def test_an_unknown_refusal_says_bwrap_s_words_and_no_made_up_remedy() -> None:
    missing = _only(_facts(namespaces="Creating new namespace failed: Invalid argument"))
    assert missing.kind == "unknown"
    assert "Invalid argument" in missing.line() and "none labcoat knows" in missing.line()


def test_root_without_the_capabilities_its_mode_needs_is_named_with_both_remedies() -> None:
    """Root's mode makes namespaces without a user namespace (measured: CAP_SYS_ADMIN for
    the mount namespace, CAP_NET_ADMIN for the loopback; docs/containers.md)."""
    no_mount = "Creating new namespace failed: Operation not permitted"
    missing = _only(_facts(namespaces=no_mount, seccomp=False))
    assert missing.kind == "capability"
    assert "Docker: `--cap-add SYS_ADMIN`" in missing.line()
    assert "Kubernetes: `securityContext.capabilities.add: [SYS_ADMIN]`" in missing.line()
    loopback = "loopback: Failed RTM_NEWADDR: No child processes"
    missing = _only(_facts(namespaces=loopback, seccomp=False))
    assert missing.kind == "capability" and "Docker: `--cap-add NET_ADMIN`" in missing.line()
    # an ordinary user's refusal is not root's capability
    missing = _only(_facts(namespaces=no_mount, seccomp=False, root=False))
    assert missing.kind == "unknown"


def test_nothing_is_missing_outside_a_container_or_where_all_is_given() -> None:
    assert _container.missing_permissions(_facts(signal=None, namespaces=NO_NAMESPACE)) == []
    assert _container.missing_permissions(_facts(masked=("/proc/kcore",))) == []


def test_the_container_signals(tmp_path: Path) -> None:
    assert _container.container_signal(tmp_path, {}) is None
    assert "Kubernetes" in str(
        _container.container_signal(tmp_path, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    )
    (tmp_path / "proc" / "1").mkdir(parents=True)
    (tmp_path / "proc" / "1" / "cgroup").write_text("0::/kubepods/burstable/pod1/abc\n")
    assert _container.container_signal(tmp_path, {}) == "a container (kubepods in /proc/1/cgroup)"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").write_text("")
    assert _container.container_signal(tmp_path, {}) == "a container (/run/.containerenv)"
    assert _container.container_signal(tmp_path / "none", {"container": "podman"}) == (
        "a container (container=podman)"
    )


def _refused_with(found: list[_container.Missing]) -> str | None:
    _container.missing_here.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_container, "missing_here", lambda: tuple(found))
        return _container.container_refused()


def _withheld(monkeypatch: pytest.MonkeyPatch, *found: _container.Missing) -> None:
    monkeypatch.setattr(_container, "missing_here", lambda: found)
    monkeypatch.setattr(check_cmd, "missing_here", lambda: found)


def test_check_in_a_container_prints_each_missing_permission(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    masked = _container.missing_permissions(
        _facts(proc_mount=NO_PROC, masked=("/proc/kcore",), apparmor="docker-default (enforce)")
    )
    _withheld(monkeypatch, *masked)
    code, out, err = run_cli_captured(capsys, "check")
    assert code == 2
    lines = out.splitlines()
    assert lines == [f"labcoat check: missing in this container: {m.line()}" for m in masked]
    assert "gives the sandbox all it needs" not in err


def test_eval_and_validate_refuse_in_one_line_where_the_container_withholds_a_permission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [seccomp] = _container.missing_permissions(_facts(namespaces=NO_NAMESPACE, seccomp=True))
    _withheld(monkeypatch, seccomp)
    logs = tmp_path / "logs"
    for args in (
        ("eval", "mini", "--model", "labcoat/scripted", "--log-dir", str(logs)),
        ("validate", "mini", "--log-dir", str(logs)),
    ):
        code, out, err = run_cli_captured(capsys, *args)
        assert code == 2, out + err
        [line] = err.strip().splitlines()
        assert line == f"labcoat: error: no sandbox can start in this container: {seccomp.line()}"
        assert not logs.exists()  # nothing half-started


# -- --sandbox docker: experimental, says what it drops, refuses where it cannot run --


def _fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("echo '{\"Version\":\"20.10.24+dfsg1\"}'", "Docker Engine 20.10.24+dfsg1 is older than 24.0.6, which Inspect's docker provider needs"),
        ("echo '{\"Version\":\"24.0.7+dfsg\"}'", None),
        ("echo 'Cannot connect to the Docker daemon' >&2; exit 1", "no Docker Engine answers (Cannot connect to the Docker daemon)"),
    ],
)  # fmt: skip
def test_the_docker_engine_s_problem_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, said: str | None
) -> None:
    _fake_docker(tmp_path, monkeypatch, script)
    assert docker_engine_problem() == said


def test_check_with_docker_says_what_it_drops_and_why_it_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_docker(tmp_path, monkeypatch, 'echo \'{"Version":"20.10.24+dfsg1"}\'')
    code, out, err = run_cli_captured(capsys, "check", "--sandbox", "docker")
    assert code == 2
    assert "labcoat check: --sandbox docker cannot run here: Docker Engine 20.10.24+dfsg1" in out
    [drops] = [line for line in err.splitlines() if "--sandbox docker is experimental" in line]
    for dropped in ("offline", "the filtering proxy", "GPUs", "graders in fresh bwrap"):
        assert dropped in drops


def test_the_help_marks_docker_experimental(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("eval", "validate"):
        code, out, _err = run_cli_captured(capsys, command, "--help")
        assert code == 0
        assert "docker: experimental, weaker than bwrap" in " ".join(out.split())


def test_eval_with_docker_here_stops_in_one_line_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On this machine: no engine, or Debian's 20.10 (Inspect's provider needs 24.0.6)."""
    problem = docker_engine_problem()
    if problem is None:
        pytest.skip("a Docker Engine that Inspect's provider accepts answers here")
    logs = tmp_path / "logs"
    code, out, err = run_cli_captured(
        capsys, "eval", "mini", "--sandbox", "docker", "--model", "labcoat/scripted",
        "--log-dir", str(logs),
    )  # fmt: skip
    assert code == 2, out + err
    [line] = err.strip().splitlines()
    assert line == (
        f"labcoat: error: --sandbox docker cannot run here: {problem} (an experimental "
        "sandbox, weaker than bwrap: docs/sandbox.md)"
    )
    assert not logs.exists()  # nothing half-started (Inspect's own check came after it)


def test_eval_with_docker_without_bwrap_stops_before_anything_starts(tmp_path: Path) -> None:
    """--sandbox docker grades in bwrap sandboxes on the host: without bwrap it says so
    at once, even where an engine Inspect accepts answers (a stand-in here), and starts
    nothing (the command as a user runs it: its own process, a PATH without bwrap)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text('#!/bin/sh\necho \'{"Version":"24.0.7+dfsg"}\'\n')
    (bin_dir / "docker").chmod(0o755)
    logs = tmp_path / "logs"
    done = subprocess.run(
        [sys.executable, "-m", "labcoat", "eval", "mini", "--sandbox", "docker",
         "--model", "labcoat/scripted", "--log-dir", str(logs)],
        capture_output=True, text=True, timeout=300,
        # as a user runs it: not the tests' one-user stand-in for root (conftest)
        env={
            **{k: v for k, v in os.environ.items() if k != "LABCOAT_UNSAFE_ROOT_ONE_USER"},
            "PATH": str(bin_dir),
        },
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "bubblewrap (bwrap) is not installed" in line, done.stderr
    assert not logs.exists()

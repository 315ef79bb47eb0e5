"""Task environments: pip's own syntax, built by pip in a sandbox, failing one at a time."""

from __future__ import annotations

import json
import os
import site
import sys
import time
from pathlib import Path

import anyio
import pytest
from wheels import write_wheel

from labcoat._errors import TaskDataError
from labcoat.sandbox import (
    BwrapConfig,
    BwrapSession,
    EnvironmentBuildError,
    PythonEnv,
    _environment,
    ensure_environment,
    read_requirements_file,
    specifiers,
)
from labcoat.sandbox._pip_adapt import closest_available, without_accelerator

pytestmark = pytest.mark.anyio


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of its own, and no GPU, whatever the machine has."""
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_environment, "machine_has_gpu", lambda: False)
    monkeypatch.setattr(_environment, "_failures", {})
    return tmp_path / "cache"


# --- reading requirements files ----------------------------------------------------------


def test_a_file_keeps_pips_syntax_and_becomes_self_contained(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "pkg").mkdir(parents=True)
    (task / "more.txt").write_text("scipy>=1.10  # inlined, as pip reads -r\n")
    (task / "constraints.txt").write_text("numpy<3\n")
    (task / "requirements.txt").write_text(
        "# a comment\n"
        "--extra-index-url https://download.pytorch.org/whl/cu124\n"
        "torch==2.5.1+cu124 ; sys_platform == 'linux'\n"
        "numpy \\\n"
        "  >=1.26\n"
        "-r more.txt\n"
        "-c constraints.txt\n"
        "-f ./wheels\n"
        "-e ./pkg\n"
        "git+https://github.com/example/x.git#egg=x\n"
        "-e git+https://github.com/example/y.git#egg=y\n"
    )
    env = read_requirements_file(task / "requirements.txt")
    assert env.requirements == (
        "--extra-index-url https://download.pytorch.org/whl/cu124",
        "torch==2.5.1+cu124 ; sys_platform == 'linux'",
        "numpy   >=1.26",
        "scipy>=1.10",
        f"-c {task / 'constraints.txt'}",
        f"-f {task / 'wheels'}",
        str(task / "pkg"),  # editable local paths install as regular packages
        "git+https://github.com/example/x.git#egg=x",
        "-e git+https://github.com/example/y.git#egg=y",
    )
    assert env.sources == (str(task / "requirements.txt"),)
    assert task / "pkg" in env.local_paths()


def test_bad_requirements_files_name_file_and_place(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_bytes(b"numpy\n\xe9\n")
    with pytest.raises(TaskDataError, match=r"requirements.txt: byte 6: not UTF-8 text"):
        read_requirements_file(req)
    req.write_text("-r requirements.txt\n")
    with pytest.raises(TaskDataError, match="a cycle of -r files"):
        read_requirements_file(req)
    req.write_text("-r missing.txt\n")
    with pytest.raises(TaskDataError, match=r"missing.txt: cannot read"):
        read_requirements_file(req)


def test_without_a_gpu_cuda_builds_become_cpu_builds() -> None:
    lines, notes = without_accelerator(
        (
            "--extra-index-url https://download.pytorch.org/whl/cu124",
            "--index-url https://download.pytorch.org/whl/cu121",
            "torch==2.5.1+cu124",
            "torchvision==0.20.1+cu124; python_version >= '3.8'",
            "mypkg==1.0+local.build",
            "numpy==1.26.4",
        )
    )
    assert lines == (
        "--extra-index-url https://download.pytorch.org/whl/cpu",
        "--extra-index-url https://download.pytorch.org/whl/cpu",
        "torch==2.5.1",
        'torchvision==0.20.1; python_version >= "3.8"',
        "mypkg==1.0+local.build",
        "numpy==1.26.4",
    )
    assert len(notes) == 4 and all(n.startswith("no GPU here:") for n in notes)


def test_a_missing_pinned_version_moves_to_the_closest() -> None:
    output = (
        "ERROR: Could not find a version that satisfies the requirement torch==2.1.9 "
        "(from versions: 2.0.1, 2.1.0, 2.1.2, 2.2.0, 2.3.0rc1)\n"
        "ERROR: No matching distribution found for torch==2.1.9\n"
    )
    lines, note = closest_available(("numpy", "torch==2.1.9"), output) or ((), "")
    assert lines == ("numpy", "torch==2.1.2") and "torch==2.1.2" in note
    newer = output.replace("2.1.9", "1.9").replace("2.1.0, 2.1.2, ", "")
    assert closest_available(("torch==1.9",), newer)[0] == ("torch==2.0.1",)  # type: ignore[index]
    assert closest_available(("torch",), "ERROR: something else") is None


def test_pips_reason_in_one_line() -> None:
    clone = (
        "Collecting x\n  Cloning https://github.com/e/x.git to /tmp/pip-x\n"
        "  fatal: unable to access 'https://github.com/e/x.git/': Could not resolve host: github.com\n"
        "  error: subprocess-exited-with-error\n"
        "ERROR: Cannot install x because these package versions have conflicting dependencies.\n"
    )
    assert _environment.pip_reason(clone) == (
        "fatal: unable to access 'https://github.com/e/x.git/': Could not resolve host: github.com"
    )
    missing = "ERROR: No matching distribution found for nosuchpkg==9\n"
    assert _environment.pip_reason(missing) == "No matching distribution found for nosuchpkg==9"


# --- building ----------------------------------------------------------------------------


async def _run(env: PythonEnv, code: str) -> str:
    session = await BwrapSession.create(BwrapConfig(environment=env))
    try:
        result = await session.exec(["python", "-c", code])
        assert result.success, result.stderr
        return result.stdout
    finally:
        await session.close()


async def test_pip_installs_the_lines_offline_in_a_sandbox(cache: Path, tmp_path: Path) -> None:
    task = tmp_path / "task"
    write_wheel(task / "wheels", "labcoatdemo", "1.0")
    write_wheel(task / "wheels", "labcoatdemo", "1.2")
    (task / "requirements.txt").write_text(
        "--no-index\n-f ./wheels\nlabcoatdemo==1.1  # not there: 1.2 is the closest\n"
    )
    env = read_requirements_file(task / "requirements.txt")
    built = await ensure_environment(env)
    assert built.source == "pip"
    assert any("labcoatdemo==1.2" in note for note in built.notes)
    out = await _run(env, "import labcoatdemo, sys; print(labcoatdemo.VERSION, sys.prefix)")
    assert out.split() == ["1.2", "/opt/labcoat/env"]
    assert not list((cache / "envs").glob("*.building-*"))
    # a second use finds it built
    again = await ensure_environment(env)
    assert again.path == built.path and again.notes == built.notes


async def test_a_cuda_pin_installs_the_cpu_build(cache: Path, tmp_path: Path) -> None:
    write_wheel(tmp_path / "wheels", "labcoatdemo", "1.0")
    env = specifiers("--no-index", f"-f {tmp_path / 'wheels'}", "labcoatdemo==1.0+cu121")
    built = await ensure_environment(env)
    assert built.notes == ("no GPU here: 'labcoatdemo==1.0+cu121' installed as 'labcoatdemo==1.0'",)
    assert (await _run(env, "import labcoatdemo; print(labcoatdemo.VERSION)")).strip() == "1.0"


async def test_an_unreachable_requirement_fails_that_environment_alone(
    cache: Path, tmp_path: Path
) -> None:
    write_wheel(tmp_path / "wheels", "labcoatdemo", "1.0")
    good = specifiers("--no-index", f"-f {tmp_path / 'wheels'}", "labcoatdemo")
    bad = specifiers("git+https://labcoat-test.invalid/nothing.git#egg=nothing")
    results = {}

    async def build(name: str, env: PythonEnv) -> None:
        try:
            results[name] = await ensure_environment(env)
        except EnvironmentBuildError as exc:
            results[name] = exc

    async with anyio.create_task_group() as group:
        group.start_soon(build, "bad", bad)
        group.start_soon(build, "good", good)
    assert results["good"].source == "pip"  # type: ignore[union-attr]
    error = results["bad"]
    assert isinstance(error, EnvironmentBuildError)
    assert "labcoat-test.invalid" in error.reason and "\n" not in str(error)
    assert str(error).startswith("environment unavailable: ")
    assert error.log is not None and error.log.is_file()
    assert not list((cache / "envs").glob("*.building-*"))  # nothing half-built stays
    started = time.monotonic()
    with pytest.raises(EnvironmentBuildError):
        await ensure_environment(bad)  # remembered, not rebuilt, within this run
    assert time.monotonic() - started < 1


async def test_a_sandbox_sees_only_its_environment(cache: Path) -> None:
    """The interpreter's own site-packages are hidden; what the harness has and the task
    names is linked, not downloaded."""
    host_sites = [p for p in site.getsitepackages([sys.base_prefix]) if os.path.isdir(p)]
    assert any(os.listdir(p) for p in host_sites), "nothing on the host to hide: no test"
    env = specifiers("numpy")
    built = await ensure_environment(env)
    assert built.source == "harness"
    listing = json.loads(
        await _run(
            env,
            "import json, os, sys\n"
            "print(json.dumps({p: sorted(os.listdir(p)) if os.path.isdir(p) else None "
            "for p in sys.path if p.endswith(('site-packages', 'dist-packages'))}))",
        )
    )
    own = listing.pop("/opt/labcoat/env/lib/python3.11/site-packages")
    assert "numpy" in own
    assert listing and all(not names for names in listing.values()), listing
    empty = await _run(PythonEnv(), "import importlib.util as u; print(u.find_spec('numpy'))")
    assert empty.strip() == "None"


async def test_the_agent_can_add_packages_of_its_own(cache: Path, tmp_path: Path) -> None:
    """The environment is read-only; pip installs into the agent's home instead (pip's
    own fallback, as on any machine where site-packages is not writable)."""
    wheel = write_wheel(tmp_path / "wheels", "labcoatdemo", "1.0")
    session = await BwrapSession.create(BwrapConfig(environment=PythonEnv()))
    try:
        await session.write_file("demo.whl.b64", wheel.read_bytes().hex())
        name = wheel.name
        script = (
            f"python -c \"import pathlib; pathlib.Path('{name}').write_bytes("
            "bytes.fromhex(pathlib.Path('demo.whl.b64').read_text()))\" && "
            f"python -m pip install -q --no-index {name} && "
            "python -c 'import labcoatdemo; print(labcoatdemo.__file__)'"
        )
        result = await session.exec(["sh", "-c", script])
        assert result.success, result.stderr
        assert result.stdout.startswith("/home/agent/.local/lib/python3.11/site-packages/")
    finally:
        await session.close()


def test_unreachable_extra_indexes_are_left_out_with_a_note() -> None:
    from labcoat.sandbox._pip_adapt import without_unreachable_indexes

    lines = (
        "--extra-index-url https://download.pytorch.org/whl/cpu",
        "--extra-index-url=https://pypi.example.org/simple",
        "-f https://wheels.example.org/",
        "--index-url https://mirror.invalid/simple",  # primary: pip must fail, not fall back
        "torch==2.5.1",
    )
    reachable = {"https://pypi.example.org/simple"}
    kept, notes = without_unreachable_indexes(lines, lambda url: url in reachable)
    assert kept == (
        "--extra-index-url=https://pypi.example.org/simple",
        "--index-url https://mirror.invalid/simple",
        "torch==2.5.1",
    )
    assert len(notes) == 2 and "download.pytorch.org/whl/cpu cannot be reached" in notes[0]


async def test_an_interpreter_without_ensurepip_still_gets_environments(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Debian's Python without python3-venv has no ensurepip; the environment gets the
    harness's pip instead, with its commands."""
    import pip

    from labcoat.sandbox import Bind
    from labcoat.sandbox._command import python_layout

    hidden = tmp_path / "no-ensurepip"
    hidden.mkdir()
    layout = python_layout()
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    ensurepip = f"{layout.sandbox_prefix}/lib/{version}/ensurepip"
    build_config = _environment.build_config

    def without_ensurepip(workdir, binds, local_paths, env, **options):  # type: ignore[no-untyped-def]
        config = build_config(workdir, binds, local_paths, env, **options)
        return config.model_copy(
            update={"binds": (*config.binds, Bind(source=str(hidden), target=ensurepip))}
        )

    monkeypatch.setattr(_environment, "build_config", without_ensurepip)
    env = specifiers("labcoatnothing-at-all-here ; python_version < '3'")  # nothing to install
    built = await ensure_environment(env)
    session = await BwrapSession.create(BwrapConfig(environment=env))
    try:
        seen = await session.exec(["sh", "-c", "pip --version; pip3 --version"])
        assert seen.success, seen.stderr
        assert seen.stdout.count(f"pip {pip.__version__} from /opt/labcoat/env/") == 2
    finally:
        await session.close()
    log = (built.path / "labcoat-env.json").read_text()
    assert "ensurepip" not in log
    # the build really had no ensurepip: the same sandbox setup cannot run it
    probe_config = without_ensurepip("/tmp", [], [], {})
    probe = await BwrapSession.create(probe_config)
    try:
        result = await probe.exec([layout.sandbox_executable, "-I", "-m", "ensurepip", "--version"])
        assert not result.success
    finally:
        await probe.close()


async def test_a_task_python_s_packages_reach_every_environment(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An air-gapped GPU machine keeps torch in a venv of its own (LABCOAT_TASK_PYTHON):
    environments see its packages, and pip counts them as installed (no index needed)."""
    import subprocess

    from labcoat.sandbox import TASK_PYTHON_ENV, task_python_paths
    from labcoat.sandbox._base_python import _site_packages

    preinstalled = tmp_path / "opt-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(preinstalled)], check=True)
    monkeypatch.setenv(TASK_PYTHON_ENV, str(preinstalled / "bin" / "python"))
    _site_packages.cache_clear()
    [site_dir] = task_python_paths()
    (Path(site_dir) / "bigtorch.py").write_text("WHO = 'preinstalled'\n")
    info = Path(site_dir) / "bigtorch-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bigtorch\nVersion: 2.0\n")
    (info / "RECORD").write_text("")
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # nowhere to install from: it must be there
    env = specifiers("bigtorch==2.0")
    built = await ensure_environment(env)
    assert built.source == "pip" and built.host_paths == (site_dir,)
    session = await BwrapSession.create(BwrapConfig(environment=env))
    try:
        seen = await session.exec(["python", "-c", "import bigtorch; print(bigtorch.WHO)"])
        assert seen.success and seen.stdout.strip() == "preinstalled", seen.stderr
    finally:
        await session.close()
    # another interpreter is another environment
    monkeypatch.delenv(TASK_PYTHON_ENV)
    assert _environment.environment_key(env) != built.path.name


async def test_a_date_cap_needs_a_pip_that_honours_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip 23 ignores a date given as a variable and resolves to today's releases: an
    environment pinned to a date is refused with the reason instead, and another pip's
    environments are other environments."""
    from labcoat.sandbox import _resolver

    dated = PythonEnv(requirements=("numpy",), uploaded_prior_to="2024-06-30T23:59:59Z")
    today = _resolver.resolver()
    key = _environment.environment_key(dated)
    old = _resolver.Resolver("23.2", honours_dates=False)
    monkeypatch.setattr(_resolver, "resolver", lambda: old)
    assert _environment.environment_key(dated) != key  # the pip version is in the key
    with pytest.raises(EnvironmentBuildError) as refused:
        await ensure_environment(dated)
    message = str(refused.value)
    assert "\n" not in message
    assert "resolving as of 2024-06-30T23:59:59Z needs pip with --uploaded-prior-to" in message
    assert "labcoat's pip is 23.2" in message
    # without a date, the old pip builds as before; with this one, dates hold
    undated = await ensure_environment(PythonEnv(requirements=("numpy",)))
    assert undated.source == "harness"
    assert today.honours_dates, f"this machine's pip ({today.pip_version}) should have the option"

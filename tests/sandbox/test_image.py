"""Task images: build steps run once as root in a build sandbox, on top of an environment;
what they leave in the kept directories and the environment is cached by content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from isolation_modes import needs_separate_users
from wheels import write_wheel

from labcoat.sandbox import (
    BwrapConfig,
    BwrapSession,
    ImageBuildError,
    ImageSpec,
    ImageStep,
    _environment,
    _image,
    as_sandbox_root,
    built_image,
    ensure_image,
    has_separate_root,
    read_requirements_file,
)
from labcoat.sandbox._layout import host_ids

pytestmark = pytest.mark.anyio


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_environment, "_failures", {})
    monkeypatch.setattr(_image, "_failures", {})
    return tmp_path / "cache"


def _shell(label: str, script: str) -> ImageStep:
    return ImageStep(label=label, argv=("bash", "-c", script))


async def test_steps_install_into_the_environment_and_fill_the_kept_dirs(
    cache: Path, tmp_path: Path
) -> None:
    source = tmp_path / "family"
    source.mkdir()
    (source / "data.txt").write_text("the family's file\n")
    write_wheel(source / "wheels", "imagepkg", "1.0")
    (source / "requirements.txt").write_text("--no-index\n-f ./wheels\n")
    spec = ImageSpec(
        name="demo",
        environment=read_requirements_file(source / "requirements.txt"),
        root_source=str(source),
        context=str(source),
        keep=("/root", "/home/agent", "/protected"),
        steps=(
            _shell("who", "id -u > /root/uid.txt; cp /opt/labcoat/context/data.txt /home/agent/"),
            _shell("pip", "pip install --no-index -f /root/wheels imagepkg"),
            _shell("secret", 'echo "$DEMO_TOKEN" | sha256sum > /protected/token.sha'),
        ),
        secrets={"DEMO_TOKEN": "hunter2"},
    )
    image = await ensure_image(spec)
    dirs = image.dirs
    # /root is root's, closed to the agent: rootless, the harness reads it as that root
    assert as_sandbox_root(["cat", str(dirs["/root"] / "data.txt")]) == "the family's file\n"
    assert as_sandbox_root(["cat", str(dirs["/root"] / "uid.txt")]).strip() == (
        "0" if has_separate_root() else "1000"
    )
    if has_separate_root():
        held = dirs["/root"].stat()
        assert (held.st_uid, held.st_mode & 0o777) == (host_ids(0, 0)[0], 0o700)
    assert (dirs["/home/agent"] / "data.txt").exists()
    assert (dirs["/protected"] / "token.sha").read_text().startswith("46a9d5bd")
    # the secret is in no file of the image, nor in the spec as serialized
    assert "hunter2" not in spec.model_dump_json()
    record = json.loads((image.path / "labcoat-image.json").read_text())
    assert record["steps"] == ["who", "pip", "secret"]
    # sandboxes using the image see what pip installed in a step
    session = await BwrapSession.create(BwrapConfig(image=spec))
    try:
        result = await session.exec(["python", "-c", "import imagepkg; print(imagepkg.VERSION)"])
        assert result.stdout.strip() == "1.0", result.stderr
    finally:
        await session.close()
    # built once: the same spec finds it; other secret values make another image
    complete = (image.path / ".complete").stat().st_mtime_ns
    again = await ensure_image(spec)
    assert again.path == image.path and (again.path / ".complete").stat().st_mtime_ns == complete
    other = spec.model_copy(update={"secrets": {"DEMO_TOKEN": "other"}})
    assert built_image(other) is None


async def test_a_failing_step_names_itself_in_one_line(cache: Path) -> None:
    spec = ImageSpec(
        name="demo",
        steps=(_shell("step one", "true"), _shell("step two", "echo nope >&2; exit 3")),
    )
    with pytest.raises(ImageBuildError) as error:
        await ensure_image(spec)
    message = str(error.value)
    assert message.startswith("environment unavailable: demo: step two failed (exit 3: nope)")
    assert "\n" not in message and error.value.log is not None and error.value.log.exists()
    assert not list((cache / "images").glob("*.building-*"))  # nothing half-built stays
    with pytest.raises(ImageBuildError):  # remembered for the rest of the run
        await ensure_image(spec)


async def test_writes_outside_the_kept_dirs_fail(cache: Path) -> None:
    spec = ImageSpec(name="demo", steps=(_shell("system", "touch /usr/local/bin/x"),))
    with pytest.raises(ImageBuildError, match="Read-only file system"):
        await ensure_image(spec)
    with pytest.raises(ValueError, match="cannot keep"):
        ImageSpec(name="demo", keep=("/usr",))


@needs_separate_users
async def test_login_shells_keep_the_sandbox_environment(cache: Path) -> None:
    """runuser --login (METR's protected scoring runs the agent's code so) sees the task's
    Python first on PATH and the thread counts, as the sandbox's own commands do."""
    session = await BwrapSession.create(BwrapConfig(cpus=2, default_user="root"))
    try:
        result = await session.exec(
            [
                "runuser",
                "agent",
                "--group=protected",
                "--login",
                "--command=id -gn; command -v python; echo $OMP_NUM_THREADS",
            ]
        )
        assert result.success, result.stderr
        group, python, threads = result.stdout.split()
        assert (group, python, threads) == ("protected", "/opt/labcoat/env/bin/python", "2")
    finally:
        await session.close()

"""A METR task family's image: `build_steps.json` and `TaskFamily.install()`, as the standard's
Dockerfile runs them, on top of the family's Python environment.

The Dockerfile copies the family's folder to /root, makes /protected (owned by root and
the `protected` group, with an empty score.log), runs the build steps in order (a `file`
step copies a file or folder of the family to a path, absolute or relative to /root, and
makes it unwritable to group and others; a `shell` step runs its commands with bash,
stopping at the first failure), then calls `TaskFamily.install()` if the family has one.
All of it runs as root, with the network and the family's required environment variables.
labcoat runs the same steps in a build sandbox and keeps /root, /home/agent, /protected and
the Python environment as the family's image (`labcoat.sandbox.ImageSpec`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from labcoat._errors import TaskDataError
from labcoat._util.json_file import read_json
from labcoat._util.yaml_file import field_path
from labcoat.families.rebench import _driver
from labcoat.sandbox import BUILD_CONTEXT, ImageSpec, ImageStep, PythonEnv, SystemSpec

BUILD_STEPS = "build_steps.json"
IMAGE_DIRS = ("/root", "/home/agent", "/protected")

# what the standard's Dockerfile does before the build steps (a `protected` group, a
# /protected folder only root and that group may enter, a score log only they may write)
_PROTECTED_DIR = """\
set -e
mkdir -p /protected
touch /protected/score.log
if [ "$(id -u)" = 0 ]; then
  chown -R root:protected /protected
  chmod u=rwX,g=rX,o= /protected
  chmod u=rw,g=w,o= /protected/score.log
fi
"""

# Docker's COPY from the build context (the family's folder as it is on disk): a file to
# a file, or into a folder when the target ends with /; a folder's contents into the
# target folder; then `chmod -R go-w`, as the standard's image builder does for `file` steps
_COPY = """\
import os, shutil, stat, sys
source, target = sys.argv[1], sys.argv[2]
into_dir = target.endswith("/") or os.path.isdir(target)
if os.path.isdir(source):
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
else:
    if into_dir:
        os.makedirs(target, exist_ok=True)
        target = os.path.join(target, os.path.basename(source))
    else:
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    shutil.copy2(source, target)
paths = [target]
if os.path.isdir(target):
    for parent, dirs, files in os.walk(target):
        paths += [os.path.join(parent, name) for name in dirs + files]
for path in paths:
    if not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode & ~(stat.S_IWGRP | stat.S_IWOTH))
"""

# the image builder's shell template: strict bash, commands in order
_SHELL = "set -euo pipefail\nIFS=$'\\n\\t'\n\n{commands}\n"


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileStep(_Step):
    type: Literal["file"]
    source: str
    destination: str


class ShellStep(_Step):
    type: Literal["shell"]
    commands: list[str] = Field(min_length=1)


BuildStep = Annotated[FileStep | ShellStep, Field(discriminator="type")]
_STEPS = TypeAdapter(list[BuildStep])


def load_build_steps(family_dir: Path) -> list[FileStep | ShellStep]:
    """build_steps.json, checked: a wrong step names the file and the step."""
    path = family_dir / BUILD_STEPS
    if not path.exists():
        return []
    data = read_json(path)
    try:
        steps = _STEPS.validate_python(data)
    except ValidationError as ex:
        error = ex.errors()[0]
        loc = [p for p in error["loc"] if p not in ("file", "shell")]
        raise TaskDataError(path, field_path(tuple(loc)) or None, error["msg"]) from None
    root = family_dir.resolve()
    for i, step in enumerate(steps):
        if isinstance(step, FileStep):
            source = (family_dir / step.source).resolve()
            if source != root and root not in source.parents:
                raise TaskDataError(path, f"[{i}].source", f"{step.source} is outside the family")
            if not source.exists():
                raise TaskDataError(path, f"[{i}].source", f"{step.source} does not exist")
    return steps


def defines_install(module: Path) -> bool:
    """Whether `TaskFamily` defines install() (read from the source; a family whose file
    cannot be parsed is assumed to, and its install step says what is wrong)."""
    try:
        tree = ast.parse(module.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return True
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TaskFamily":
            if node.bases:
                return True  # an inherited install() cannot be seen from here
            return any(
                isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "install"
                for item in node.body
            )
    return True


# a command that changes the system's packages: the host's read-only tree cannot take it
_SYSTEM_PACKAGES = re.compile(r"(?<![\w-])(apt-get|apt|aptitude|dpkg)(?![\w-])")


def _install_source(module: Path) -> str:
    """The source of `TaskFamily.install()` ('' when there is none to read)."""
    text = module.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "install":
            return ast.get_source_segment(text, node) or ""
    return ""


def needs_system(name: str, family_dir: Path, steps: list[FileStep | ShellStep]) -> str | None:
    """Why the family's image needs a root file system of its own (its build steps or
    install() change the system's packages), or None when the host's tree will do."""
    for i, step in enumerate(steps):
        if isinstance(step, ShellStep):
            found = _SYSTEM_PACKAGES.search("\n".join(step.commands))
            if found:
                return f"{BUILD_STEPS}[{i}] runs {found.group(1)}"
    module = family_dir / f"{name}.py"
    found = _SYSTEM_PACKAGES.search(_install_source(module)) if module.is_file() else None
    return f"TaskFamily.install() runs {found.group(1)}" if found else None


HOST_SYSTEM = "the host's system tree"


def system_path(name: str, family_dir: Path, steps: list[FileStep | ShellStep]) -> str:
    """Which system the family's samples run on, and why (for `list --json` and `check`)."""
    why = needs_system(name, family_dir, steps)
    return f"a Debian root file system of its own ({why})" if why else HOST_SYSTEM


def family_image(
    name: str,
    family_dir: Path,
    environment: PythonEnv,
    steps: list[FileStep | ShellStep],
    secrets: dict[str, str],
) -> ImageSpec | None:
    """The family's image, or None when it has neither build steps nor install()."""
    install = defines_install(family_dir / f"{name}.py")
    if not steps and not install:
        return None
    image_steps = [
        ImageStep(label="/protected (the standard's image)", argv=("bash", "-c", _PROTECTED_DIR))
    ]
    for i, step in enumerate(steps):
        label = f"{BUILD_STEPS}[{i}] ({step.type})"
        if isinstance(step, FileStep):
            source = f"{BUILD_CONTEXT}/{step.source}"
            argv: tuple[str, ...] = ("python3", "-c", _COPY, source, step.destination)
        else:
            argv = ("bash", "-c", _SHELL.format(commands="\n".join(step.commands)))
        image_steps.append(ImageStep(label=label, argv=argv))
    if install:
        driver = Path(_driver.__file__).read_text()
        image_steps.append(
            ImageStep(label="TaskFamily.install()", argv=("python3", "-c", driver, "install", name))
        )
    why = needs_system(name, family_dir, steps)
    return ImageSpec(
        name=name,
        environment=environment,
        root_source=str(family_dir),
        context=str(family_dir),
        keep=IMAGE_DIRS,
        steps=tuple(image_steps),
        env={"TASK_FAMILY_NAME": name},
        secrets=secrets,
        system=SystemSpec(reason=why) if why else None,
    )

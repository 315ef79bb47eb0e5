"""A conda `environment.yml` read as pip requirement lines (upstream's own environment).

ResearchCodeBench defines one environment for every paper, in conda's format, at the
root of its repository. labcoat installs it with pip into a cached task environment:

- `python=3.11` names the Python version (`PythonEnv.python`; sandboxes run the
  harness's interpreter, and a different version is noted);
- `pip` itself is dropped: pip is the installer;
- conda packages become pip requirements under their PyPI names (`pytorch` is `torch`);
  conda's `=1.26` (a version prefix) becomes `==1.26.*`, `==`, `>=`, `<`, `!=` and
  comma-joined ranges stay as they are, a build string (`=py311_cuda12.1_0`) and a
  channel (`conda-forge::`) are dropped;
- CUDA runtime packages (`pytorch-cuda`, `cudatoolkit`, `cudnn`, ...) and conda-only
  system libraries (`mkl`, `libgcc-ng`, ...) are dropped: PyPI's wheels carry their own
  libraries, and without a GPU the CPU build is what runs;
- the `pip:` list is taken line by line, in pip's own syntax, with relative paths
  resolved against the file's folder (conda runs pip there).

Every dropped or changed line is a note, shown in the log and by `labcoat validate`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from labcoat._errors import TaskDataError
from labcoat._util.yaml_file import read_yaml
from labcoat.sandbox import PythonEnv, requirements_from_text

CONDA_FILES = ("environment.yml", "environment.yaml")

# conda package name -> PyPI name, where they differ
PIP_NAMES = {
    "pytorch": "torch",
    "pytorch-cpu": "torch",
    "pytorch-gpu": "torch",
    "py-opencv": "opencv-python",
    "opencv": "opencv-python",
    "pytorch-lightning": "pytorch-lightning",
    "tensorflow-gpu": "tensorflow",
    "faiss-gpu": "faiss-cpu",
    "faiss": "faiss-cpu",
    "pyyaml": "PyYAML",
    "msgpack-python": "msgpack",
    "pillow-simd": "pillow",
}
# CUDA runtimes and builds: PyPI's torch wheels carry their own; none without a GPU
CUDA_PACKAGES = re.compile(
    r"^(pytorch-cuda|cudatoolkit(-dev)?|cuda(-[\w-]+)?|cudnn|nccl|cutensor|"
    r"pytorch-mutex|cpuonly|magma(-cuda\d+)?|nvidia-[\w-]+|libcu\w+|libnv\w+)$"
)
# conda-only system libraries and tools; pip neither has nor needs them
SYSTEM_PACKAGES = re.compile(
    r"^(_libgcc_mutex|_openmp_mutex|libgcc(-ng)?|libstdcxx(-ng)?|libgfortran\w*|libgomp|"
    r"mkl(-\w+)?|intel-openmp|blas|libblas|libcblas|liblapack\w*|openblas|libopenblas|"
    r"ld_impl_linux-64|ca-certificates|certifi|openssl|libffi|ncurses|readline|sqlite|tk|"
    r"xz|zlib|bzip2|libzlib|libuuid|tzdata|ffmpeg|cmake|make|gcc\w*|gxx\w*|git|wget|"
    r"curl|libpng|jpeg|libjpeg-turbo|libtiff|freetype|lame|openh264|llvm-openmp|"
    r"libiconv|gettext|expat|libxml2|icu|lz4-c|zstd|yaml|libsqlite|libnsl|libxcrypt)$"
)
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<rest>.*)$")


@dataclass(frozen=True)
class CondaEnvironment:
    """An environment.yml as pip requirement lines, and what was changed to get them."""

    path: Path
    env: PythonEnv
    notes: tuple[str, ...]


def find_conda_file(folders: list[Path]) -> Path | None:
    """The first environment.yml (or .yaml) found in `folders`, in order."""
    for folder in folders:
        for name in CONDA_FILES:
            if (folder / name).is_file():
                return folder / name
    return None


def read_conda_environment(path: Path) -> CondaEnvironment:
    """The environment.yml at `path` as pip requirement lines (see the module's docstring)."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise TaskDataError(path, None, "expected a mapping with 'dependencies'")
    deps = data.get("dependencies") or []
    if not isinstance(deps, list):
        raise TaskDataError(path, "dependencies", "expected a list")
    lines: list[str] = []
    pip_lines: list[str] = []
    notes: list[str] = []
    python: str | None = None
    for i, dep in enumerate(deps):
        if isinstance(dep, dict):
            if set(dep) != {"pip"} or not isinstance(dep["pip"], list):
                raise TaskDataError(path, f"dependencies[{i}]", "expected 'pip:' with a list")
            pip_lines += [str(x) for x in dep["pip"] if str(x).strip()]
            continue
        if not isinstance(dep, str | int | float):
            raise TaskDataError(path, f"dependencies[{i}]", f"cannot read {dep!r}")
        spec = str(dep).strip()
        name, requirement, note = conda_to_pip(spec)
        if name == "python":
            python = requirement
            continue
        if note:
            notes.append(note)
        if requirement:
            lines.append(requirement)
    pip_env = requirements_from_text("\n".join(pip_lines), path.parent, source=str(path))
    env = PythonEnv(
        requirements=tuple(dict.fromkeys([*lines, *pip_env.requirements])),
        python=python,
        sources=(str(path),),
    )
    return CondaEnvironment(path, env, tuple(notes))


def conda_to_pip(spec: str) -> tuple[str, str | None, str | None]:
    """(conda name, pip requirement or None when dropped, a note when changed or dropped).

    For `python` the second item is the version ("3.11"), or None when unpinned.
    """
    text = spec.split("#", 1)[0].strip()
    if "::" in text:
        text = text.split("::", 1)[1]  # a channel: pip has one index for all
    match = _SPEC.match(text)
    if match is None:
        return text, None, f"conda dependency {spec!r} not understood: left out"
    name, rest = match["name"].lower(), match["rest"].strip()
    version, build = _version_and_build(rest)
    if name == "python":
        return name, (re.sub(r"^[=<>!~]+", "", version).rstrip(".*") or None), None
    if name == "pip":
        return name, None, None  # pip is the installer
    if CUDA_PACKAGES.match(name):
        return (
            name,
            None,
            (f"conda {spec!r}: a CUDA runtime, left out (PyPI's wheels carry their own)"),
        )
    if SYSTEM_PACKAGES.match(name):
        return name, None, f"conda {spec!r}: a conda system package, left out"
    pip_name = PIP_NAMES.get(name, name)
    requirement = pip_name + _pip_specifier(version)
    note: str | None = None
    if pip_name != name:
        note = f"conda {spec!r} installed as {requirement!r}"
    if build and re.search(r"cuda|cu\d{2,}", build):
        note = f"conda {spec!r}: CUDA build string dropped, installed as {requirement!r}"
    if "|" in version:
        requirement = pip_name
        note = f"conda {spec!r}: pip has no 'or' of versions; installed {pip_name!r}"
    return name, requirement, note


def _version_and_build(rest: str) -> tuple[str, str]:
    """conda's `=1.2=build`, `==1.2`, `>=1.2,<2`, `1.2.* build` into (version, build)."""
    rest = rest.strip()
    if not rest:
        return "", ""
    if " " in rest and not re.match(r"^[<>=!~]", rest):  # `name 1.2.* build`
        parts = rest.split()
        return parts[0], parts[1] if len(parts) > 1 else ""
    if rest.startswith("=") and not rest.startswith("=="):
        body = rest[1:]
        version, _, build = body.partition("=")
        return "=" + version.strip(), build.strip()
    return rest.replace(" ", ""), ""


def _pip_specifier(version: str) -> str:
    if not version:
        return ""
    if version.startswith("=") and not version.startswith("=="):
        v = version[1:]  # conda's fuzzy `=1.26`: every 1.26.x
        return f"=={v}" if v.endswith("*") else f"=={v}.*"
    if re.match(r"^\d", version):  # `name 1.2.*` (space-separated): conda matches exactly
        return f"=={version}"
    return version

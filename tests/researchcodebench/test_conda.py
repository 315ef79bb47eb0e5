"""Upstream's conda environment.yml, read as pip requirement lines (no building here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labcoat._errors import TaskDataError
from labcoat.families.researchcodebench._availability import blamed_line, project_names
from labcoat.families.researchcodebench._conda import conda_to_pip, read_conda_environment
from labcoat.families.researchcodebench._environment import pset_environment


@pytest.mark.parametrize(
    ("spec", "requirement", "noted"),
    [
        ("pytorch=2.1.2", "torch==2.1.2.*", True),
        ("torchvision=0.16.2", "torchvision==0.16.2.*", False),
        ("numpy=1.26", "numpy==1.26.*", False),
        ("numpy=1.26.*", "numpy==1.26.*", False),
        ("scipy==1.11.4", "scipy==1.11.4", False),
        ("pandas>=2.0,<3", "pandas>=2.0,<3", False),
        ("einops", "einops", False),
        ("conda-forge::timm=0.9.12", "timm==0.9.12.*", False),
        ("pytorch=2.1.2=py3.11_cuda12.1_cudnn8.9.2_0", "torch==2.1.2.*", True),
        ("h5py 3.9.*", "h5py==3.9.*", False),
        ("py-opencv", "opencv-python", True),
        ("pytorch-cuda=12.1", None, True),
        ("cudatoolkit=11.8", None, True),
        ("mkl", None, True),
        ("pip>=23.0", None, False),
    ],
)
def test_conda_lines_map_to_pip(spec: str, requirement: str | None, noted: bool) -> None:
    _, got, note = conda_to_pip(spec)
    assert got == requirement
    assert bool(note) == noted


def test_python_version_is_the_environments(tmp_path: Path) -> None:
    assert conda_to_pip("python=3.11")[1] == "3.11"
    (tmp_path / "environment.yml").write_text(
        "name: x\ndependencies:\n  - python=3.11\n  - numpy=1.26\n  - pip:\n"
        "    - -r extra.txt\n    - ./local_pkg\n    - git+https://example.invalid/a.git#egg=a\n"
    )
    (tmp_path / "extra.txt").write_text("einops  # a comment\n")
    conda = read_conda_environment(tmp_path / "environment.yml")
    assert conda.env.python == "3.11"
    assert conda.env.requirements == (
        "numpy==1.26.*",
        "einops",
        str(tmp_path / "local_pkg"),
        "git+https://example.invalid/a.git#egg=a",
    )


def test_bad_environment_files_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "environment.yml"
    path.write_text("dependencies:\n  - {conda: [x]}\n")
    with pytest.raises(TaskDataError, match=r"dependencies\[0\]"):
        read_conda_environment(path)
    path.write_text("dependencies: 3\n")
    with pytest.raises(TaskDataError, match="dependencies"):
        read_conda_environment(path)


def test_the_environment_resolves_as_of_the_psets_latest_date(tmp_path: Path) -> None:
    pset = tmp_path / "pset"
    pset.mkdir()
    (pset / "papers.yaml").write_text(
        "- id: a\n  arxiv_date: '2025-01-02'\n  last_commit_date: 2025-04-24\n"
    )
    (tmp_path / "environment.yml").write_text("dependencies:\n  - numpy\n")
    env, notes = pset_environment(pset)
    assert env.uploaded_prior_to == "2025-04-24T23:59:59Z"
    assert any("resolved as of 2025-04-24" in n for n in notes)


PIP_GIT_FAILURE = """\
Collecting numpy (from -r /opt/labcoat/env/labcoat-requirements.txt (line 1))
Collecting git+https://github.com/a/mmcv.git@d409 (from -r /opt/labcoat/env/labcoat-requirements.txt (line 2))
  Cloning https://github.com/a/mmcv.git (to revision d409) to /tmp/pip-req-build-x
  fatal: unable to access 'https://github.com/a/mmcv.git/': Could not resolve host: github.com
  error: subprocess-exited-with-error
"""


def test_the_line_pip_failed_on_is_found_in_its_output() -> None:
    lines = ("numpy", "git+https://github.com/a/mmcv.git@d409", "apex==0.9.10dev")
    assert blamed_line(lines, PIP_GIT_FAILURE) == lines[1]
    missing = "ERROR: No matching distribution found for apex==0.9.10dev\n"
    assert blamed_line(lines, missing) == "apex==0.9.10dev"
    conflict = (
        "ERROR: Cannot install torch and torchrl\nThe conflict is caused by:\n"
        "    The user requested torch==2.1.2\n    torchrl 0.12.0 depends on torch>=2.5\n"
        "ERROR: ResolutionImpossible: for help visit ...\n"
    )
    assert blamed_line(("torch==2.1.2", "torchrl"), conflict) == "torchrl"
    assert blamed_line(lines, "ERROR: something else entirely\n") is None


def test_what_a_requirement_line_installs() -> None:
    assert "torch-fidelity" in project_names(
        "-e git+https://github.com/LTH14/torch-fidelity.git@master#egg=torch-fidelity"
    )
    assert "meltingpot" in project_names("git+https://github.com/deepmind/meltingpot.git@v2.4.0")
    assert project_names("timm==0.9.12") == ["timm"]

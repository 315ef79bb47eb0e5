"""What a paper's tests import from outside the paper, and its requirements."""

from __future__ import annotations

from pathlib import Path

import pytest

from labcoat._errors import TaskDataError
from labcoat.families.researchcodebench import load_papers
from labcoat.families.researchcodebench._environment import (
    paper_environment,
    required_modules,
)
from labcoat.sandbox import read_requirements_file, specifiers
from labcoat.suites import SUITES_DIR

from .helpers import PROBE_MODULE, write_pset

TEST = """\
import os
import unittest
from typing import TYPE_CHECKING

import numpy as np
from lib.models import build
from probe_mod import probe

try:
    import apex
except ImportError:
    apex = None
if TYPE_CHECKING:
    import mypy_extensions


def helper():
    import only_when_called  # not imported when the module loads


class TestProbe(unittest.TestCase):
    def test(self):
        self.assertEqual(probe(), 1)
"""

LIB_INIT = "from .models import build\n"
MODELS = """\
import torch
from . import layers
from .util import helper_fn  # a relative import of a missing module: the paper's problem
"""
LAYERS = "import timm.layers\n"
UNUSED = "import mmcv  # never imported from the test\n"


def test_imports_followed_through_the_papers_own_modules(tmp_path: Path) -> None:
    pset = write_pset(
        tmp_path,
        {
            "deep": {
                "probe_mod.py": PROBE_MODULE,
                "paper2code_test.py": TEST,
                "lib/__init__.py": LIB_INIT,
                "lib/models/__init__.py": "from .core import build\n",
                "lib/models/core.py": MODELS + "def build():\n    pass\n",
                "lib/models/layers.py": LAYERS,
                "lib/unused.py": UNUSED,
            }
        },
    )
    [paper] = load_papers(pset)
    found = required_modules(paper)
    assert set(found) == {"os", "unittest", "typing", "numpy", "torch", "timm"}
    assert found["torch"] == "lib/models/core.py"
    assert found["timm"] == "lib/models/layers.py"
    assert found["numpy"] == "paper2code_test.py"


def test_bundled_papers_need_numpy_and_name_it() -> None:
    for paper in load_papers(SUITES_DIR / "mini" / "researchcodebench"):
        assert "numpy" in required_modules(paper)
        assert paper_environment(paper, specifiers("scipy")).requirements == ("scipy", "numpy")


def test_requirements_files(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("# the paper's\ntorch>=2.1  # CPU is enough\n\ntimm==0.9.12\n")
    assert read_requirements_file(req).requirements == ("torch>=2.1", "timm==0.9.12")
    # pip's own syntax is kept for pip
    req.write_text("numpy\n-e git+https://example.org/x.git#egg=x\n")
    assert read_requirements_file(req).requirements == (
        "numpy",
        "-e git+https://example.org/x.git#egg=x",
    )
    req.write_bytes(b"numpy\n\xff\n")
    with pytest.raises(TaskDataError, match=r"requirements.txt: byte 6: not UTF-8 text"):
        read_requirements_file(req)


def test_pset_wide_requirements_come_first(tmp_path: Path) -> None:
    from labcoat.families.researchcodebench._task import base_environment

    pset = write_pset(tmp_path, {"p": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": ""}})
    assert base_environment(pset, None).requirements == ()
    (pset / "requirements.txt").write_text("torch\n")
    extra = tmp_path / "more.txt"
    extra.write_text("timm\n")
    assert base_environment(pset, str(extra)).requirements == ("torch", "timm")
    assert base_environment(pset, ["einops"]).requirements == ("torch", "einops")

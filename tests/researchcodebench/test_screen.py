"""The static screen: every reference snippet passes it, code that reaches memory does not."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from labcoat.families.researchcodebench import load_papers
from labcoat.families.researchcodebench._completion import extract_code
from labcoat.families.researchcodebench._edits import placeholder_index
from labcoat.families.researchcodebench._screen import screen_code, screen_completion
from labcoat.families.researchcodebench._snippets import insert_completion, mask_snippet, reindent

MINI = Path(__file__).parents[2] / "src/labcoat/suites/mini/researchcodebench"
CHECKOUT = os.environ.get("LABCOAT_RCB_CHECKOUT")


def _refused_references(root: Path) -> tuple[int, dict[str, list[str]]]:
    """(snippets, refused ones) with every reference filled in as the oracle answers."""
    count, refused = 0, {}
    for paper in load_papers(root):
        for af in paper.parse_annotated():
            for snippet in af.snippets:
                masked = mask_snippet(af, snippet)
                reply = f"```python\n{textwrap.dedent(snippet.body)}```"
                code = extract_code(reply, masked)
                first = placeholder_index(masked.splitlines(), snippet) + 1
                last = first + len(reindent(code, snippet.indent).splitlines()) - 1
                filled = insert_completion(masked, snippet, code)
                count += 1
                reasons = screen_completion(filled, first, last) + screen_code(code)
                if reasons:
                    refused[f"{paper.id}/{snippet.id}"] = reasons
    return count, refused


def test_no_reference_of_the_bundled_pset_is_refused() -> None:
    count, refused = _refused_references(MINI)
    assert count == 24 and refused == {}


@pytest.mark.skipif(not CHECKOUT, reason="set LABCOAT_RCB_CHECKOUT to a ResearchCodeBench checkout")
def test_no_reference_of_upstream_is_refused() -> None:
    assert CHECKOUT is not None
    count, refused = _refused_references(Path(CHECKOUT))
    assert count >= 200 and refused == {}


@pytest.mark.parametrize(
    "code",
    [
        # raw memory through numpy: an interface on an instance, a namespace, a class body
        "class V:\n    def __init__(self, a):\n        self.__array_interface__ = {}\n",
        "from types import SimpleNamespace\nnp.asarray(SimpleNamespace(**d))\n",
        "class V:\n    __array_interface__ = {}\n",
        "np.lib.stride_tricks.as_strided(x, (10**9,), (1,))\n",
        "x.ctypes.data\n",
        "np.ctypeslib.as_array(p, (8,))\n",
        # names made at run time
        'getattr(np, "as" + "array")(x)\n',
        'd = {}\nd["_" * 2 + "x"] = 1\nf(**d)\n',
        'f(**{"_" * 2: 1})\n',
        "type(x)('V', (), {})\n",
        'eval("1")\n',
        # /proc and descriptors
        'os.open("self/maps", os.O_RDONLY, dir_fd=fd)\n',
        'os.chdir("/proc")\n',
        "with open(p) as f:\n    pass\n",
        'np.loadtxt("/proc/self/maps")\n',
        # code objects, frames, unittest
        "f.__code__.replace(co_code=b'')\n",
        "g.gi_frame.f_back\n",
        "raise unittest.SkipTest('x')\n",
        "self.skipTest('x')\n",
        "import inspect\n",
        "from numpy import ctypeslib\n",
        "import ctypes as c\n",
        "id(x)\n",
        # objects that agree with any comparison
        "class A:\n    def __eq__(self, other):\n        return True\n",
        "global np\nnp = None\n",
        # files of code
        'np.savetxt("m.py", [], header="import os")\n',
    ],
)
def test_reaching_past_the_mathematics_is_refused(code: str) -> None:
    assert screen_code(code), code


@pytest.mark.parametrize(
    "code",
    [
        "return np.asarray(x) * 2.0\n",
        "model.eval()\nsys.stdout.write('\\n')\n",
        "out = unet(x, t, **conditioning)\n",  # a parameter or the surrounding code's
        "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)\n",
        "self._attn = getattr(self, 'attn', None)\n",
        "path = os.path.join(root, name)\n",
        "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n",
        "y = x.copy()\nz = code + signal\n",
    ],
)
def test_plain_mathematics_passes(code: str) -> None:
    assert screen_code(code) == [], code


def test_only_the_completions_lines_are_screened() -> None:
    filled = "import os\n\n\ndef f(x):\n    return os.getpid() + x\n"
    assert screen_completion(filled, 5, 5)  # its own line reaches os.getpid
    assert screen_completion(filled, 4, 4) == []  # `import os` is the paper's own
    assert screen_completion("import ctypes\nx = 1\n", 2, 2) == []


def test_what_a_completion_reaches_is_an_allowlist() -> None:
    """Names and modules the paper's file does not give are refused, whatever they are
    (round four: `logging.sys.modules[...]` named nothing on the lists of past cheats)."""
    head = "import numpy as np\nimport logging\n\n\ndef f(x, scale):\n"
    # the file's own imports, the function's arguments, its own locals, plain builtins
    ok = head + "    y = np.asarray(x) * scale\n    return logging.getLogger('a'), len(y)\n"
    assert screen_completion(ok, 6, 7) == []
    refused = {
        "    import logging\n": "imports logging, which the paper's file does not",
        "    import json\n": "imports json, which the paper's file does not",
        "    return np.ma.masked_all(x) + helper(x)\n": "uses helper, which neither",
        "    return input()\n": "uses input, which neither",
    }
    for line, why in refused.items():
        filled = "import numpy as np\n\n\ndef f(x):\n" + line
        assert any(why in r for r in screen_completion(filled, 5, 5)), (line, why)
    # math needs no import in the paper's file
    assert screen_completion("def f(x):\n    import math\n    return math.sqrt(x)\n", 2, 3) == []

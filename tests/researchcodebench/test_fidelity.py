"""Regressions from grading the real ResearchCodeBench checkout, on mini papers of our own.

Each test stands for a bug that cost reference lines on upstream's pset: a completion
cut where its body repeats the code after the block (eomt), the preloaded interpreter's
HOME unreadable by the run (matplotlib's cache, LEN), thread counts and time limits
under parallel runs (llm-sci-use), and the environment: pip's syntax, leftovers of a
failed build, the host's packages, and papers that need what cannot be had here.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import textwrap
import zipfile
from pathlib import Path

import anyio
import pytest

from labcoat._run._results import collect_results
from labcoat.families.researchcodebench import (
    FailureKind,
    extract_code,
    load_papers,
    mask_snippet,
    parse_annotated_file,
    researchcodebench,
)
from labcoat.families.researchcodebench._grading import GradingPool
from labcoat.families.researchcodebench._task import (
    check_environments,
    planned_environments,
)
from labcoat.sandbox._environment import envs_dir

from .helpers import probe_file, probe_paper, write_pset

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

# --- 1. a block whose body repeats the lines after it (eomt's transformer loop) ---------

LOOP_MODULE = """\
def run(blocks, x):
    out = []
    # <paper2code name="process blocks">
    for i, b in enumerate(blocks):
        if i % 2 == 0:
            y = x * 2
            out.append(y)
        x = x + b
    # </paper2code name="process blocks">

    y = x * 2
    out.append(y)
    return out
"""
LOOP_BODY = """\
for i, b in enumerate(blocks):
    if i % 2 == 0:
        y = x * 2
        out.append(y)
    x = x + b
"""
LOOP_TEST = """\
import unittest

import loop_mod


class TestLoop(unittest.TestCase):
    def test_run(self):
        self.assertEqual(loop_mod.run([1, 2, 3], 1), [2, 8, 14])


if __name__ == "__main__":
    unittest.main()
"""


def test_a_body_that_repeats_the_following_lines_is_not_cut(tmp_path: Path) -> None:
    pset = write_pset(
        tmp_path, {"loop": {"loop_mod.py": LOOP_MODULE, "paper2code_test.py": LOOP_TEST}}
    )
    af = parse_annotated_file(pset / "loop", "loop_mod.py")
    [snippet] = af.snippets
    masked = mask_snippet(af, snippet)
    assert extract_code(f"```python\n{LOOP_BODY}```", masked) == LOOP_BODY
    # a reply that echoes the whole function around the block is still cut to the block
    indented = textwrap.indent(LOOP_BODY, "    ")
    echo = f"def run(blocks, x):\n    out = []\n{indented}\n    y = x * 2\n    out.append(y)\n    return out\n"
    assert extract_code(f"```python\n{echo}```", masked) == LOOP_BODY
    # and the oracle of such a paper passes through the whole task
    log = _run(researchcodebench(target=str(pset), agent="oracle"), tmp_path / "logs")
    [sample] = log.samples
    assert sample.scores["researchcodebench_scorer"].value["normalized"] == 1.0


# --- 2. HOME: what the preloaded imports cache there is the run's own -------------------

HOMECACHE = '''\
"""Caches a folder under HOME at import, as matplotlib does."""
import os

CACHE = os.path.join(os.environ["HOME"], ".cache", "homecache")
os.makedirs(CACHE, exist_ok=True)


def write(name):
    with open(os.path.join(CACHE, name), "w") as f:
        f.write("x")
    return sorted(os.listdir(CACHE))
'''


def build_wheel(folder: Path, name: str, module_text: str) -> Path:
    """A minimal pure-Python wheel with one module (pip installs it offline)."""
    dist = f"{name}-0.1.dist-info"
    files = {
        f"{name}.py": module_text,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: labcoat-tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel


async def test_what_preloaded_imports_cache_in_home_is_the_runs_own(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "homecache", HOMECACHE)
    test = (
        "import unittest\nimport homecache\nimport probe_mod\n\n"
        "class T(unittest.TestCase):\n    def test(self):\n"
        "        self.assertEqual(probe_mod.probe(), 1)\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )
    paper = probe_paper(tmp_path, **{"paper2code_test.py": test, "requirements.txt": f"{wheel}\n"})
    environments, _ = planned_environments(paper.folder.parent, [paper], None)
    env = environments[paper.id]
    body = """
        import homecache, os
        print("cache", homecache.write(str(os.getpid())), homecache.CACHE)
        return 1
    """
    async with GradingPool(1, preload=True) as pool:
        runs = [await pool.grade(paper, {"probe_mod.py": probe_file(body)}, environment=env)]
        runs.append(await pool.grade(paper, {"probe_mod.py": probe_file(body)}, environment=env))
    for run in runs:
        assert run.passed and run.runner == "preloaded", run.stderr
        # one file: the run's own; the previous run's is gone
        assert run.stdout.count("'") == 2, run.stdout
        assert "/tmp/.labcoat-home-0/.cache/homecache" in run.stdout


# --- 3. threads per run, and limits that mean the same under load -----------------------


async def test_threads_per_run_are_the_cpus_it_is_given(tmp_path: Path) -> None:
    paper = probe_paper(tmp_path)
    body = """
        import os
        print("threads", os.environ["OMP_NUM_THREADS"], os.environ["OPENBLAS_NUM_THREADS"])
        return 1
    """
    cpus = os.cpu_count() or 1
    for parallel in sorted({1, cpus}):
        async with GradingPool(parallel) as pool:
            run = await pool.grade(paper, {"probe_mod.py": probe_file(body)})
        expected = str(max(1, cpus // parallel))
        assert f"threads {expected} {expected}" in run.stdout, run.stdout


async def test_time_limits_count_the_runs_own_work(tmp_path: Path) -> None:
    paper = probe_paper(tmp_path)
    busy = "while True:\n    pass"
    waits = "import time\ntime.sleep(30)\nreturn 1"
    naps = "import time\ntime.sleep(1.5)\nreturn 1"  # longer than 1 s, but idle
    hog = "import os\nwhile True:\n    os.getpid()"

    async with GradingPool(2, preload=False) as pool:

        async def grade(code: str, timeout: float):
            return await pool.grade(paper, {"probe_mod.py": probe_file(code)}, timeout=timeout)

        cpu = await grade(busy, 1)
        wall = await grade(waits, 1)
        # the machine loaded by another run's busy loop: a light run still passes
        results = {}
        async with anyio.create_task_group() as tg:

            async def keep(key: str, code: str, timeout: float) -> None:
                results[key] = await grade(code, timeout)

            tg.start_soon(keep, "hog", hog, 3)
            tg.start_soon(keep, "nap", naps, 1)
    assert cpu.timed_out and cpu.limit == "cpu" and cpu.failure().kind == FailureKind.TIMEOUT
    assert "CPU time" in cpu.failure().message
    assert wall.timed_out and wall.limit == "wall" and "wall clock" in wall.failure().message
    assert results["nap"].passed, results["nap"].stderr
    assert results["hog"].timed_out and results["hog"].limit == "cpu"


# --- 4. environments: pip's syntax, failures per paper, nothing of the host -------------

CONDA = """\
name: mini
channels: [pytorch, nvidia, defaults]
dependencies:
  - python=3.11
  - pip>=23.0
  - numpy
  - pytorch-cuda=12.1
  - pip:
    - -e git+https://example.invalid/labcoat/xpkg.git@main#egg=xpkg
"""


def _needs(module: str) -> str:
    return (
        f"import unittest\nimport {module}\nimport probe_mod\n\n"
        "class T(unittest.TestCase):\n    def test(self):\n"
        "        self.assertEqual(probe_mod.probe(), 1)\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )


def test_a_line_pip_cannot_install_costs_only_the_papers_that_need_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCOAT_CACHE", str(tmp_path / "cache"))
    from .helpers import PROBE_MODULE

    pset = write_pset(
        tmp_path / "repo",
        {
            "needs-x": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": _needs("xpkg")},
            "plain": {
                "probe_mod.py": PROBE_MODULE,
                "paper2code_test.py": _needs("numpy"),
                # never installed: environment.yml defines the environment (as upstream)
                "requirements.txt": "git+https://example.invalid/other.git#egg=other\n",
            },
        },
    )
    (pset.parent / "environment.yml").write_text(CONDA)
    papers = load_papers(pset)
    environments, notes = planned_environments(pset, papers, None)
    assert environments["plain"].requirements == (
        "numpy",
        "-e git+https://example.invalid/labcoat/xpkg.git@main#egg=xpkg",
    )
    assert environments["plain"].python == "3.11"
    assert any("plain/requirements.txt not installed" in n for n in notes["plain"])
    assert any("pytorch-cuda" in n for n in notes["plain"])

    statuses = anyio.run(check_environments, papers, environments, notes)
    assert statuses["plain"].unavailable is None
    assert statuses["plain"].env.requirements == ("numpy",)
    assert any(
        n.startswith("left out '-e git+https://example.invalid") for n in statuses["plain"].notes
    )
    reason = statuses["needs-x"].unavailable
    assert reason.startswith("needs xpkg, not installable here: -e git+https://example.invalid")
    # a failed build leaves nothing half-built behind
    assert not [p for p in envs_dir().iterdir() if ".building" in p.name]

    # and the task grades what can be graded, listing the others as unavailable
    log = _run(researchcodebench(target=str(pset), agent="oracle"), tmp_path / "logs")
    results = {r.task_id: r for r in collect_results([log])}
    assert results["plain"].normalized_mean == 1.0
    assert results["needs-x"].unavailable.startswith("needs xpkg")


def test_the_harness_packages_are_not_in_a_papers_sandbox(tmp_path: Path) -> None:
    from .helpers import PROBE_MODULE

    pset = write_pset(
        tmp_path,
        {"host-only": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": _needs("pydantic")}},
    )
    papers = load_papers(pset)
    environments, notes = planned_environments(pset, papers, None)
    statuses = anyio.run(check_environments, papers, environments, notes)
    assert (
        statuses["host-only"].unavailable
        == "needs pydantic, which its environment does not provide"
    )


def test_tests_that_download_at_run_time_are_unavailable_needs_network(tmp_path: Path) -> None:
    test = (
        "import unittest\nimport urllib.request\nimport probe_mod\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n"
        "        urllib.request.urlopen('https://example.com/weights.pt', timeout=5)\n"
        "    def test(self):\n        self.assertEqual(probe_mod.probe(), 1)\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )
    from .helpers import PROBE_MODULE

    pset = write_pset(
        tmp_path, {"downloads": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": test}}
    )
    log = _run(researchcodebench(target=str(pset), agent="oracle"), tmp_path / "logs")
    [result] = collect_results([log])
    assert result.unavailable is not None and result.unavailable.startswith("needs network")


def test_a_completion_that_sends_the_tests_to_the_network_fails_and_is_flagged(
    tmp_path: Path,
) -> None:
    """Attack: a wrong block whose value sends the paper's own test code to the network
    (here: the test downloads only when the value is off), so that the failed run reads
    as a paper that needs network, a sample that cannot run here and is in no mean. The
    reference's run decides whose need it is: it tries no network, so the completion's
    run is a failure (0) and flagged. Control: the oracle on a paper whose tests always
    download is still `needs network` (the test above)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    from .helpers import PROBE_MODULE

    test = (
        "import unittest\nimport urllib.request\nimport probe_mod\n\n"
        "class T(unittest.TestCase):\n    def test(self):\n"
        "        value = probe_mod.probe()\n"
        "        if value != 1:  # the paper's own fallback: fetch the expected value\n"
        "            urllib.request.urlopen('https://example.com/expected.pt', timeout=5)\n"
        "        self.assertEqual(value, 1)\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n"
    )
    pset = write_pset(
        tmp_path, {"fallback": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": test}}
    )

    def reply(*args: object) -> ModelOutput:
        output = ModelOutput.from_content("mockllm/model", "```python\nreturn 2\n```")
        output.usage = ModelUsage(input_tokens=10, output_tokens=5)
        return output

    from inspect_ai import eval

    [log] = eval(
        researchcodebench(target=str(pset)),
        model="mockllm/model",
        model_args={"custom_outputs": reply},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    [result] = collect_results([log])
    assert result.unavailable is None and result.cannot_run_here == 0
    assert result.runs == 1 and result.normalized_mean == 0.0
    [sample] = log.samples or []
    flags = sample.scores["researchcodebench_scorer"].metadata["integrity_flags"]
    assert any("try the network" in f for f in flags), flags


def _run(task, log_dir: Path):
    from inspect_ai import eval

    [log] = eval(task, model="none/none", log_dir=str(log_dir), display="none")
    return log

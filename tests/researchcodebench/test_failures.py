"""Pass detection, failure kinds and the answer-access check, on real unittest output."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from labcoat.families.researchcodebench import (
    FailureKind,
    classify_failure,
    exceptions_raised,
    parse_unittest_summary,
    run_passed,
    suspicious_access,
)

TEST_SCRIPT = """\
import unittest

from block import f


class T(unittest.TestCase):
    def test_value(self):
        self.assertEqual(f([1, 2, 3]), 6)

    def test_type(self):
        self.assertIsInstance(f([1]), int)


if __name__ == "__main__":
    unittest.main()
"""


def run(tmp_path: Path, module: str, script: str = TEST_SCRIPT) -> tuple[int, str, str]:
    (tmp_path / "block.py").write_text(textwrap.dedent(module))
    (tmp_path / "paper2code_test.py").write_text(script)
    done = subprocess.run(
        [sys.executable, "paper2code_test.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def test_passing_run(tmp_path: Path):
    code, out, err = run(tmp_path, "def f(xs):\n    return sum(xs)\n")
    assert run_passed(code, out, err)
    assert classify_failure(code, out, err) is None
    summary = parse_unittest_summary(err)
    assert summary is not None and (summary.ran, summary.ok) == (2, True)


@pytest.mark.parametrize(
    ("module", "kind", "exception"),
    [
        ("def f(xs):\n    return sum(xs) +\n", FailureKind.SYNTAX, "SyntaxError"),
        ("def f(xs):\nreturn 1\n", FailureKind.SYNTAX, "IndentationError"),
        ("def f(xs):\n    return total\n", FailureKind.NAME_IMPORT, "NameError"),
        (
            "import no_such_module_xyz\ndef f(xs):\n    return 1\n",
            FailureKind.NAME_IMPORT,
            "ModuleNotFoundError",
        ),
        ("def f(xs):\n    return xs.total()\n", FailureKind.ATTRIBUTE, "AttributeError"),
        ("def f(xs):\n    return sum(xs) + 'a'\n", FailureKind.TYPE_SHAPE, "TypeError"),
        ("def f(xs):\n    return xs[10]\n", FailureKind.INDEX_KEY, "IndexError"),
        ("def f(xs):\n    return {}['k']\n", FailureKind.INDEX_KEY, "KeyError"),
        ("def f(xs):\n    return 7\n", FailureKind.WRONG_RESULT, "AssertionError"),
        ("def f(xs):\n    return 1 / 0\n", FailureKind.CRASH, "ZeroDivisionError"),
        (
            "def f(xs):\n    raise ValueError('operands could not be broadcast together with "
            "shapes (3,) (4,)')\n",
            FailureKind.TYPE_SHAPE,
            "ValueError",
        ),
        (
            "def f(xs):\n    raise ValueError('math domain error')\n",
            FailureKind.CRASH,
            "ValueError",
        ),
    ],
)
def test_failure_kinds(tmp_path: Path, module: str, kind: FailureKind, exception: str):
    code, out, err = run(tmp_path, module)
    assert not run_passed(code, out, err)
    failure = classify_failure(code, out, err)
    assert failure is not None
    assert (failure.kind, failure.exception) == (kind, exception)


def test_wrong_result_in_one_test_and_error_in_another(tmp_path: Path):
    # test_value fails its assertion; test_type errors: the error explains more
    module = "def f(xs):\n    if len(xs) == 1:\n        return xs.nope\n    return 0\n"
    code, out, err = run(tmp_path, module)
    failure = classify_failure(code, out, err)
    assert failure is not None and failure.kind is FailureKind.ATTRIBUTE
    summary = parse_unittest_summary(err)
    assert summary is not None and (summary.failures, summary.errors) == (1, 1)


def test_early_exit_zero_is_not_a_pass(tmp_path: Path):
    # upstream's check passes this: exit 0 and no error words in the output
    module = "import os\ndef f(xs):\n    return 0\nos._exit(0)\n"
    code, out, err = run(tmp_path, module)
    assert code == 0 and "Error" not in out + err
    assert not run_passed(code, out, err)
    failure = classify_failure(code, out, err)
    assert failure is not None and failure.kind is FailureKind.CRASH


def test_fake_summary_on_stdout_does_not_pass(tmp_path: Path):
    module = "print('Ran 2 tests in 0.001s')\nprint()\nprint('OK')\ndef f(xs):\n    return 0\n"
    code, out, err = run(tmp_path, module)
    assert "OK" in out
    assert not run_passed(code, out, err)
    # even with a clean exit, stderr's real summary (FAILED) decides
    assert not run_passed(0, out, err)
    assert run_passed(0, out, "")


def test_no_tests_ran(tmp_path: Path):
    script = "import unittest\n\nif __name__ == '__main__':\n    unittest.main()\n"
    code, out, err = run(tmp_path, "def f(xs):\n    return 0\n", script)
    assert not run_passed(code, out, err)
    failure = classify_failure(code, out, err)
    assert failure is not None and failure.kind is FailureKind.CRASH


def test_printed_words_do_not_fail_a_passing_run(tmp_path: Path):
    # upstream fails any run whose output holds "failed" or "Error:"
    module = "def f(xs):\n    print('Error: none, 0 failed')\n    return sum(xs)\n"
    code, out, err = run(tmp_path, module)
    assert run_passed(code, out, err)


def test_timeout_and_signals():
    assert classify_failure(None, "", "", timed_out=True).kind is FailureKind.TIMEOUT
    assert classify_failure(124, "", "").kind is FailureKind.TIMEOUT
    assert not run_passed(0, "", "Ran 1 test in 0.1s\n\nOK\n", timed_out=True)
    killed = classify_failure(-11, "", "")
    assert killed.kind is FailureKind.CRASH and killed.message == "killed by signal 11"


def test_summary_variants():
    assert parse_unittest_summary("Ran 1 test in 0.000s\n\nOK (skipped=1)\n").skipped == 1
    s = parse_unittest_summary(
        "Ran 5 tests in 1.5s\n\nFAILED (failures=2, errors=1, expected failures=1)\n"
    )
    assert (s.ran, s.ok, s.failures, s.errors, s.expected_failures) == (5, False, 2, 1, 1)
    assert parse_unittest_summary("all good\nOK\n") is None
    # the last summary counts
    two = "Ran 1 test in 0s\n\nOK\nRan 3 tests in 0s\n\nFAILED (failures=1)\n"
    assert parse_unittest_summary(two).ran == 3


def test_exception_lines_only_from_tracebacks():
    text = (
        "Error: this is a print, not an exception\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 3, in <module>\n'
        "    f()\n"
        "    ^^^\n"
        "numpy.linalg.LinAlgError: Singular matrix\n"
    )
    assert exceptions_raised(text) == [("LinAlgError", "Singular matrix")]


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("from model_ref import forward\nout = forward(x)", "imports reference module 'model_ref'"),
        ("import lib.attention_ref as r", "imports reference module 'lib.attention_ref'"),
        (
            "import importlib\nm = importlib.import_module('model_ref')",
            "loads reference module 'model_ref'",
        ),
        ("m = __import__('reference', fromlist=['x'])", "loads reference module 'reference'"),
        ("src = open('model_ref.py').read()", "mentions reference file 'model_ref.py'"),
        ("exec(open('paper2code_test.py').read())", "mentions the test script paper2code_test.py"),
        ("import paper2code_test", "imports the test script paper2code_test.py"),
        ("import sys\nsys.exit(0)", "calls sys.exit() and may end the test run early"),
        ("import os\nos._exit(0)", "calls os._exit() and may end the test run early"),
        ("from model_ref import (\n", "imports a reference module"),  # does not parse
        ("import ctypes\nctypes.c_char_p(id(x)).value", "imports ctypes (raw memory access)"),
        ("m = __import__('_ctypes')", "names '_ctypes' (raw memory access)"),
        ("np.ctypeslib.ctypes.pythonapi", "reaches pythonapi (raw memory access)"),
        ("import ctypes as (\n", "uses ctypes (raw memory access)"),  # does not parse
    ],
)
def test_suspicious_access(code: str, reason: str):
    assert reason in suspicious_access(code, reference_modules=("reference",))


@pytest.mark.parametrize(
    "code",
    [
        "x_ref = x.copy()\nout = x_ref * 2",  # a variable, not a module
        "cache = {'q_ref': 1}",
        "import numpy as np\ny = np.exp(x) / np.exp(x).sum()",
        "with open('weights.npy', 'rb') as fh:\n    w = np.load(fh)",
    ],
)
def test_ordinary_code_is_not_flagged(code: str):
    assert suspicious_access(code) == []

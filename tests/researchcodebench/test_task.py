"""The `researchcodebench` Inspect task end to end: bundled pset, sandboxed grading, logs.

The oracle and noop runs over the whole bundled pset (`mini_logs`, in conftest) are
shared with the aggregate command's tests.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage

from labcoat._errors import LabcoatError
from labcoat._run._results import collect_results
from labcoat._run._validate import judge
from labcoat.families.researchcodebench import discover, load_papers, researchcodebench
from labcoat.families.researchcodebench._samples import SnippetRef
from labcoat.families.researchcodebench._solvers import write_agent_repo
from labcoat.suites import SUITES_DIR

from .helpers import PROBE_MODULE, PROBE_TEST, run, write_pset


def eval_tasks(task, log_dir: Path, reply) -> list[EvalLog]:
    """Run a task with a scripted model; samples may error (unavailable papers)."""
    from inspect_ai import eval

    return eval(
        task,
        model="mockllm/model",
        model_args={"custom_outputs": reply},
        log_dir=str(log_dir),
        display="none",
    )


pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

MINI = SUITES_DIR / "mini" / "researchcodebench"
DSM = "damped-sign-momentum"


def scores(log: EvalLog) -> dict[str, tuple[dict, dict, str]]:
    out = {}
    for sample in log.samples or []:
        score = sample.scores["researchcodebench_scorer"]
        out[str(sample.id)] = (score.value, score.metadata, score.explanation)
    return out


def test_dataset_is_one_sample_per_snippet_with_its_weight() -> None:
    task = researchcodebench(agent="oracle")
    entries = {e.id: e for e in discover(MINI)}
    samples = list(task.dataset)
    assert len(samples) == sum(e.samples for e in entries.values()) == 24
    for paper_id, entry in entries.items():
        mine = [s for s in samples if s.metadata["task_id"] == paper_id]
        assert len(mine) == entry.samples
        assert sum(s.metadata["researchcodebench"]["weight"] for s in mine) == entry.extra["lines"]
    nested = next(s for s in samples if s.id == f"{DSM}/dsm.py::damped sign")
    assert nested.metadata["researchcodebench"]["depth"] == 2
    assert nested.sandbox is None  # generation mode: nothing runs beside the model


def test_prompt_holds_the_paper_unless_told_not_to() -> None:
    paper = next(p for p in load_papers(MINI) if p.id == DSM)
    tex = paper.paper_text().strip().splitlines()[5]
    [with_paper] = [s for s in researchcodebench(tasks=DSM).dataset if "learning rate" in s.id]
    [without] = [
        s for s in researchcodebench(tasks=DSM, with_paper=False).dataset if "learning rate" in s.id
    ]
    for sample in (with_paper, without):
        assert '# TODO: Implement block "learning rate"' in sample.input
        assert "def warmup_lr" in sample.input  # the context file
        assert "paper2code" not in sample.input.replace("paper2code_paper", "")
    assert tex in with_paper.input
    assert tex not in without.input
    assert without.metadata["researchcodebench"]["with_paper"] is False


def test_oracle_passes_every_snippet(mini_logs) -> None:
    _, oracle, _ = mini_logs
    assert oracle.results.scores[0].metrics["scaled_pass_at_1"].value == 100.0
    for sample_id, (value, meta, explanation) in scores(oracle).items():
        assert value["normalized"] == 1.0, (sample_id, meta["stderr"])
        assert value["weight"] == meta["weight"] > 0
        assert meta["flags"] == [] and explanation == "passed"
        assert meta["runner"] == "preloaded"
        assert meta["put_back"] == []  # what the reference block changes is never put back


def test_noop_fails_every_snippet_with_a_reason(mini_logs) -> None:
    _, _, noop = mini_logs
    assert noop.results.scores[0].metrics["pass_rate"].value == 0.0
    kinds = set()
    for value, meta, explanation in scores(noop).values():
        assert value["normalized"] == 0.0 and not meta["weak_test"]
        assert explanation.startswith(f"failed: {meta['failure']}")
        kinds.add(meta["failure"])
    assert {"name_import", "wrong_result", "syntax", "type_shape"} <= kinds


def test_validate_verdicts_from_the_logs(mini_logs) -> None:
    _, oracle, noop = mini_logs
    results = collect_results([oracle, noop])
    verdicts = judge(discover(MINI), results)
    assert [v.passed for v in verdicts] == [True, True, True], [v.problems for v in verdicts]
    assert {r.normalized_mean for r in results if r.agent == "oracle"} == {1.0}


def _reply_for(name: str, reference: str) -> str:
    """Replies in the styles models give, keyed by snippet name."""
    ref = textwrap.dedent(reference)
    deep = textwrap.indent(ref, " " * 12)
    if name == "learning rate":  # fenced, prose around it
        return f"Use the schedule:\n```python\n{textwrap.indent(ref, ' ' * 8)}```\nDone."
    if name == "interpolate momentum and gradient":  # no fence at all
        return f"Here is the implementation of the block:\n\n{deep}\nThis follows Eq. 2."
    if name == "damped sign":  # first line lost its indentation
        first, rest = deep.split("\n", 1)
        return f"```\n{first.lstrip()}\n{rest}```"
    if name == "update direction":  # at column 0 in a fence tagged py
        return f"```py\n{ref}```"
    if name == "decoupled weight decay step":  # right, but imports the reference
        return f"```python\nfrom dsm_ref import DampedSignMomentum as _Ref\n{ref}```"
    if name == "momentum update":  # right, but opens the test script, obfuscated
        return f"```python\n_ = open('paper2code' + '_test.py').read()\n{ref}```"
    wrong = ref.replace("self.beta2", "self.beta1")  # update parameter: the wrong beta
    return f"```python\n{wrong}```"


def test_generation_mode_with_a_model(tmp_path: Path) -> None:
    task = researchcodebench(tasks=DSM)
    references = {
        s.metadata["researchcodebench"]["name"]: _reference(s.metadata) for s in task.dataset
    }
    calls: list[str] = []

    def reply(messages: list[ChatMessage], *args: object) -> ModelOutput:
        prompt = messages[-1].text
        name = re.findall(r"# TODO: Implement block \"([^\"]+)\"", prompt)[0]  # then the example
        calls.append(name)
        output = ModelOutput.from_content("mockllm/model", _reply_for(name, references[name]))
        output.usage = ModelUsage(input_tokens=len(prompt) // 4, output_tokens=20)
        return output

    log = run(task, tmp_path, model="mockllm/model", model_args={"custom_outputs": reply})
    assert sorted(calls) == sorted(references)  # one call per snippet
    by_name = {meta["snippet"].split("::")[1]: (v, meta) for v, meta, _ in scores(log).values()}
    for name in (
        "learning rate",
        "interpolate momentum and gradient",
        "damped sign",
        "update direction",
    ):
        value, meta = by_name[name]
        assert value["normalized"] == 1.0, (name, meta["code"], meta["stderr"])
        assert meta["flags"] == []
    value, meta = by_name["decoupled weight decay step"]  # right, but imports the reference:
    assert value["normalized"] == 0.0  # a module the paper's file does not import is refused
    assert "imports reference module 'dsm_ref'" in meta["flags"]
    assert "the completion imports dsm_ref, which the paper's file does not" in " ".join(
        meta["flags"]
    )
    value, meta = by_name["momentum update"]  # right code, but it opens files: refused
    assert value["normalized"] == 0.0 and meta["failure"] == "integrity"
    assert meta["flags"] == ["refused before running: the completion uses open"]
    assert meta["report"] is None  # the tests never ran
    assert meta["integrity_flags"] == meta["flags"]
    value, meta = by_name["update parameter"]
    assert value["normalized"] == 0.0 and meta["failure"] == "wrong_result"


def _reference(metadata: dict) -> str:
    _, _, snippet = SnippetRef.of(metadata).resolve()
    return snippet.body


def test_agent_workspace_has_no_tests_nor_reference(tmp_path: Path) -> None:
    task = researchcodebench(
        tasks="null-slot-attention", agent="oracle", mode="agent", with_paper=False
    )
    sample = next(s for s in task.dataset if s.id.endswith("layer.py::merge heads"))
    write_agent_repo(SnippetRef.of(sample.metadata), tmp_path)
    names = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert names == ["attention.py", "init.py", "layer.py", "requirements.txt"]
    layer = (tmp_path / "layer.py").read_text()
    assert '# TODO: Implement block "merge heads"' in layer and "paper2code" not in layer
    assert "<paper2code" not in (tmp_path / "attention.py").read_text()
    assert "/home/agent/work/layer.py" not in sample.input and "`layer.py`" in sample.input
    assert sample.metadata["time_limit_minutes"] > 0


def test_agent_mode_oracle_and_noop(tmp_path: Path) -> None:
    oracle = run(researchcodebench(tasks=DSM, agent="oracle", mode="agent"), tmp_path)
    noop = run(researchcodebench(tasks=DSM, agent="noop", mode="agent"), tmp_path)
    assert all(v["normalized"] == 1.0 and not m["flags"] for v, m, _ in scores(oracle).values())
    assert all(v["normalized"] == 0.0 for v, _, _ in scores(noop).values())
    assert oracle.eval.metadata["mode"] == "agent"


def test_agents_that_work_in_a_sandbox_take_it_in_agent_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # generate mode has no sandbox for them to work in: from Python, that is refused
    with pytest.raises(LabcoatError, match="-T mode=agent"):
        researchcodebench(tasks=DSM, agent="human")
    # the CLI gives them agent mode, so a target of several families runs whole
    logs = tmp_path / "logs"
    code, out, err = run_cli_captured(
        capsys, "eval", "mini", "--task", DSM, "--agent", "cli:true",
        "--model", "labcoat/scripted", "--json", "--no-inspect", "--log-dir", str(logs),
    )  # fmt: skip
    assert code == 0, err
    [row] = json_document(out)
    assert (row["task"], row["errors"], row["normalized"]) == (DSM, 0, 0.0)
    [log] = [read_eval_log(i.name) for i in list_eval_logs(str(logs))]
    assert log.eval.task_args["mode"] == "agent"  # recorded: a regrade builds the same


def test_a_placeholder_that_passes_is_a_weak_test(tmp_path: Path) -> None:
    # tests that never call the snippet's code
    lenient = (
        "import unittest\n\nclass T(unittest.TestCase):\n    def test(self):\n"
        "        self.assertTrue(True)\n\nunittest.main()\n"
    )
    pset = write_pset(
        tmp_path, {"lenient": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": lenient}}
    )
    log = run(researchcodebench(target=str(pset), agent="noop"), tmp_path / "logs")
    [(value, meta, explanation)] = scores(log).values()
    assert value["normalized"] == 1.0 and meta["weak_test"]
    assert "weak test" in explanation


def test_a_paper_missing_modules_is_unavailable_before_any_model_call(tmp_path: Path) -> None:
    test = "import unittest\nimport labcoat_missing_pkg\n"
    pset = write_pset(
        tmp_path,
        {
            "needy": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": test},
            "fine": {"probe_mod.py": PROBE_MODULE, "paper2code_test.py": PROBE_TEST},
        },
    )
    calls: list[str] = []

    def reply(messages: list[ChatMessage], *args: object) -> ModelOutput:
        calls.append(messages[-1].text)
        output = ModelOutput.from_content("mockllm/model", "```python\nreturn 1\n```")
        output.usage = ModelUsage(input_tokens=10, output_tokens=5)
        return output

    task = researchcodebench(target=str(pset))  # builds, checks, never raises for one paper
    [log] = eval_tasks(task, tmp_path / "logs", reply)
    errors = {s.metadata["task_id"]: s.error for s in log.samples or []}
    assert errors["fine"] is None and len(calls) == 1  # the unavailable paper cost no call
    assert "environment unavailable: needs labcoat_missing_pkg" in errors["needy"].message
    [result] = [r for r in collect_results([log]) if r.task_id == "needy"]
    assert result.unavailable.startswith("needs labcoat_missing_pkg")


def test_a_checkout_with_packages_in_subfolders(tmp_path: Path) -> None:
    """The fixture checkout: `pset/` under the root, an annotated file in `lib/`."""
    checkout = Path(__file__).parent / "data" / "checkout"
    kwargs = {"target": str(checkout), "requirements": ["numpy"]}
    oracle = run(researchcodebench(agent="oracle", **kwargs), tmp_path)
    noop = run(researchcodebench(agent="noop", **kwargs), tmp_path)
    assert all(v["normalized"] == 1.0 for v, _, _ in scores(oracle).values())
    assert "two-files/lib/ops.py::double" in scores(oracle)
    assert all(v["normalized"] == 0.0 for v, _, _ in scores(noop).values())
    assert oracle.samples[0].metadata["researchcodebench"]["environment"]["requirements"] == [
        "numpy"
    ]


def test_upstreams_weak_tests_are_listed_not_failed() -> None:
    """A paper whose noop passes only under weak tests validates; its oracle must be 1."""
    from labcoat._run._results import TaskResult
    from labcoat.families._entry import TaskEntry
    from labcoat.families.researchcodebench._discover import THRESHOLDS

    entry = TaskEntry("p", "researchcodebench", "p", 3, Path("."), thresholds=THRESHOLDS)

    def results(oracle: float) -> list[TaskResult]:
        return [
            TaskResult("p", "researchcodebench", "oracle", normalized=[oracle], weights=[1.0]),
            TaskResult(
                "p",
                "researchcodebench",
                "noop",
                normalized=[1.0, 0.0],
                weights=[1.0, 3.0],
                weak_tests=["p/a.py::weak"],
                environment_notes=["left out 'x': no network"],
            ),
        ]

    [ok] = judge([entry], results(1.0))
    assert ok.passed and ok.environment == "built, 1 note(s)"
    assert ok.to_json()["weak_tests"] == ["p/a.py::weak"]
    [bad] = judge([entry], results(0.9))
    assert not bad.passed and bad.problems == ["oracle 0.900 < 1.0"]
    # elsewhere a weak test is still a failure of the task
    strict = TaskEntry("p", "rebench", "p", 3, Path("."))
    [fails] = judge([strict], results(1.0))
    assert not fails.passed and any("weak test" in p for p in fails.problems)


def test_unavailable_reasons_read_from_the_errors_repr() -> None:
    from labcoat._run._results import error_reason

    for message in (
        "LabcoatError('environment unavailable: needs network (x)')",
        'LabcoatError("environment unavailable: needs network (x)")',
        "environment unavailable: needs network (x)",
    ):
        assert error_reason(message) == "environment unavailable: needs network (x)"

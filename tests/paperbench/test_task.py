"""The `paperbench` Inspect task end to end: oracle and noop, the agent's view, the blacklist
record, the llm judge in Inspect's grader role, and failing closed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ChatMessageAssistant
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox, store

from labcoat.families._provenance_hash import file_hash
from labcoat.families.paperbench import (
    PAPER_DIR,
    SUBMISSION_DIR,
    _llm_prompts,
    load_paper,
    paperbench,
)
from labcoat.families.paperbench._llm_prompts import PROMPT_VERSION
from labcoat.suites import resolve_target

from ._judge_stub import JudgeStub

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

MINI_PAPERS = resolve_target("mini") / "paperbench" / "papers"
PAPER = "tail-averaged-sgd"


def only_sample(log: EvalLog) -> EvalSample:
    assert log.samples is not None and len(log.samples) == 1
    return log.samples[0]


def score_of(sample: EvalSample):
    assert sample.error is None, sample.error
    assert sample.scores is not None
    return sample.scores["paperbench_scorer"]


def test_oracle_and_noop_on_the_bundled_papers(tmp_path: Path) -> None:
    logs = eval(
        [paperbench(agent="oracle"), paperbench(agent="noop")],
        model="none/none",
        log_dir=str(tmp_path),
        display="none",
    )
    oracle, noop = logs
    assert oracle.status == noop.status == "success"
    assert oracle.samples is not None and noop.samples is not None
    for sample in oracle.samples:
        score = score_of(sample)
        assert score.value["raw"] == score.value["normalized"] >= 0.9
        meta = score.metadata
        assert meta["judge"] == "check" and meta["invalid_leaves"] == 0
        rep = meta["reproduction"]
        assert rep["exit_code"] == 0 and not rep["timed_out"] and rep["attempts"] == 1
        assert "results/metrics.json" in rep["files_created"]["paths"]
        tree = meta["graded_summary"]
        assert tree["score"] == score.value["raw"]
        assert sum(c["leaves"] for c in tree["by_category"].values()) == len(tree["leaves"])
        assert meta["judge_usage"]["calls"] == 0  # the check judge makes no model calls
        # and records none: its provenance names the judge, no model and no prompt
        assert meta["judge_info"] == {
            "name": "check",
            "model": None,
            "prompt_version": None,
            "prompt_hash": None,
        }
        judge = meta["provenance"]["inputs"]["judge"]
        assert judge["name"] == "check" and judge["model"] is None and judge["prompt"] is None
        assert meta["settings"]["paper_dir"].endswith(str(sample.id))
    for sample in noop.samples:
        score = score_of(sample)
        assert score.value["normalized"] <= 0.1
        assert score.metadata["reproduction"]["script_found"] is False


@solver
def probe(paper_dir: Path) -> Solver:
    """Looks around the agent's sandbox the way an agent could, and records what it saw."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        judge_only = r"\( -name rubric.json -o -name labcoat.yaml -o -name judge.addendum.md -o -name reference_submission \)"
        commands = {
            "pwd": "pwd",
            "home": "cd /home/agent && find . | sort",
            "find": f"find / {judge_only} -not -path '/proc/*' 2>/dev/null; true",
            "host": f"cat {paper_dir}/rubric.json {paper_dir}/labcoat.yaml 2>&1; true",
        }
        for name, command in commands.items():
            result = await sandbox().exec(["bash", "-c", command])
            store().set(f"probe:{name}", result.stdout + result.stderr)
        return state

    return solve


def test_the_agent_sees_the_paper_and_nothing_judge_side(tmp_path: Path) -> None:
    paper_dir = MINI_PAPERS / PAPER
    [log] = eval(
        paperbench(agent="noop", tasks=PAPER, code_dev=True),
        solver=probe(paper_dir),
        model="none/none",
        log_dir=str(tmp_path),
        display="none",
    )
    sample = only_sample(log)
    seen = sample.store
    assert seen["probe:pwd"].strip() == SUBMISSION_DIR
    listing = seen["probe:home"].split()
    assert {"./paper/paper.md", "./paper/addendum.md", "./submission"} <= set(listing)
    assert not [f for f in listing if f.startswith("./paper/") and not f.endswith(".md")]
    assert seen["probe:find"].strip() == ""
    assert "No such file or directory" in seen["probe:host"]
    assert '"sub_tasks"' not in seen["probe:host"]
    # the instructions name the paths and the reproduction limit
    assert PAPER_DIR in sample.input and SUBMISSION_DIR in sample.input  # type: ignore[operator]
    assert score_of(sample).value["raw"] == 0.0


@solver
def cheat(url: str) -> Solver:
    """Mentions a blacklisted URL in its messages and its repository."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages.append(
            ChatMessageAssistant(content=f"I will copy from https://{url}/blob/main/sgd.py")
        )
        await sandbox().write_file(f"{SUBMISSION_DIR}/README.md", f"Based on https://{url}\n")
        return state

    return solve


def test_blacklisted_urls_are_recorded_not_scored(tmp_path: Path) -> None:
    papers = tmp_path / "data" / "papers"
    shutil.copytree(MINI_PAPERS / PAPER, papers / PAPER)
    banned = "github.com/example/tail-averaging"
    (papers / PAPER / "blacklist.txt").write_text(f"{banned}\n")
    [log] = eval(
        paperbench(target=str(tmp_path / "data"), agent="noop", code_dev=True),
        solver=cheat(banned),
        model="none/none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    sample = only_sample(log)
    assert banned in str(sample.input)  # the agent was told
    assert sample.metadata["blocklist"] == {"urls": [banned], "patterns": []}
    assert sample.metadata["network"] is False
    record = score_of(sample).metadata["blocklist"]
    assert record["transcript_hits"] == [f"https://{banned}/blob/main/sgd.py"]
    assert record["submission_hits"] == {"README.md": [f"https://{banned}"]}
    assert record["flagged"] is True and record["entries"] == 1


def test_llm_judge_in_the_grader_role(tmp_path: Path) -> None:
    stub = JudgeStub()
    [log] = eval(
        paperbench(agent="oracle", tasks=PAPER, judge="llm", code_dev=True, judge_cache=False),
        model="none/none",
        model_roles={"grader": stub.model()},
        log_dir=str(tmp_path),
        display="none",
    )
    score = score_of(only_sample(log))
    assert score.value["raw"] == 1.0
    leaves = len(score.metadata["graded_summary"]["leaves"])
    usage = score.metadata["judge_usage"]
    assert usage["calls"] == stub.calls and 0 < usage["calls"] < leaves
    assert usage["input_tokens"] > 0
    # Code-Dev: only Code Development leaves, no reproduction
    assert set(score.metadata["graded_summary"]["by_category"]) == {"Code Development"}
    assert score.metadata["reproduction"] is None
    assert score.metadata["variant"] == "Code-Dev"
    assert score.metadata["integrity_flags"] == []  # the reference code aims nothing at the judge
    assert "tailavg/sgd.py" in "".join(stub.grading_prompts())
    # Code-Dev: nothing was run, so the judge is neither shown nor asked about reproduce.sh
    assert all("BEGIN: reproduce.sh" not in p for p in stub.grading_prompts())
    assert all("it was not executed" in p for p in stub.grading_prompts())
    assert load_paper(MINI_PAPERS / PAPER).paper_md.splitlines()[0] in stub.prompts[0]  # type: ignore[union-attr]
    # the model the judge called (the grader role's), its prompts, the calls it made
    info = score.metadata["judge_info"]
    assert info["model"] == "mockllm/model" and info["prompt_version"] == PROMPT_VERSION
    assert info["prompt_hash"] == file_hash(_llm_prompts.__file__)
    record = score.metadata["provenance"]
    assert record["inputs"]["judge"] == {
        "name": "llm",
        "model": "mockllm/model",
        "prompt": info["prompt_hash"],
        "prompt_version": PROMPT_VERSION,
    }
    assert record["model"]["scoring_calls"] == {"mockllm/model": stub.calls}
    assert record["model"]["calls"] == {}  # the oracle calls no model


def test_a_judge_that_cannot_grade_is_a_sample_error_not_a_zero(tmp_path: Path) -> None:
    stub = JudgeStub(replies=["not json"] * 100)
    [log] = eval(
        paperbench(agent="noop", tasks=PAPER, judge="llm", code_dev=True, judge_cache=False),
        model="none/none",
        model_roles={"grader": stub.model()},
        log_dir=str(tmp_path),
        display="none",
    )
    sample = only_sample(log)
    assert sample.error is not None
    assert "could not grade" in sample.error.message
    assert not sample.scores


def test_task_arguments_and_paper_settings_shape_the_samples(tmp_path: Path) -> None:
    from labcoat._errors import LabcoatError

    papers = tmp_path / "papers"
    shutil.copytree(MINI_PAPERS / PAPER, papers / PAPER)
    sidecar = papers / PAPER / "labcoat.yaml"
    text = sidecar.read_text()
    start = text.index("\ntask:\n") + 1  # the paper's own `task:` block, replaced
    end = text.index("\n", text.index("requirements:", start)) + 1
    sidecar.write_text(
        text[:start]
        + "task:\n  time_limit_minutes: 45\n  reproduce_timeout_minutes: 5\n  requirements: [numpy]\n"
        + text[end:]
    )
    task = paperbench(target=str(tmp_path), agent="oracle", network=True, memory_gb=2)
    [sample] = list(task.dataset)
    assert sample.metadata is not None
    assert sample.metadata["time_limit_minutes"] == 45  # the paper's own budget
    assert sample.metadata["network"] is True
    spec = sample.metadata["paperbench"]
    assert spec["reproduce_timeout_minutes"] == 5 and spec["memory_mb"] == 2048
    assert spec["judge"] == "check" and spec["code_dev"] is False
    assert sample.sandbox is not None
    config = sample.sandbox.config
    assert config.workdir == SUBMISSION_DIR and config.network is True  # type: ignore[union-attr]
    assert "5 minutes" in str(sample.input) and "45 minutes" in str(sample.input)
    # task arguments beat the paper's settings
    [override] = list(
        paperbench(target=str(tmp_path), agent="oracle", time_limit_minutes=10).dataset
    )
    assert override.metadata is not None and override.metadata["time_limit_minutes"] == 10
    # a split selects papers; bad arguments are one-line errors
    split = tmp_path / "dev.txt"
    split.write_text(f"# the dev split\n{PAPER}\n")
    assert [
        s.id for s in paperbench(target=str(tmp_path), agent="oracle", split=str(split)).dataset
    ] == [PAPER]
    with pytest.raises(LabcoatError, match="unknown PaperBench judge"):
        paperbench(judge="oracle")
    with pytest.raises(LabcoatError, match="bwrap"):
        paperbench(sandbox="local")
    sidecar.write_text(sidecar.read_text().replace("\ntask:\n", "\ntask:\n  gpus: 8\n", 1))
    with pytest.raises(LabcoatError, match=r"task\.gpus"):
        paperbench(target=str(tmp_path), agent="oracle")

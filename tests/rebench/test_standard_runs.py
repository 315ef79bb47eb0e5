"""METR task families run end to end as the standard's runners run them: end scoring and
manual scoring, protected intermediate scoring with the score log, build steps and
install(), the sample's own machine state, secrets, resources, and scoring that the
agent's solution breaks. Families: tests/rebench/data/families (METR's shapes)."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model
from isolation_modes import needs_separate_users
from scripted import OUTPUTS, scripted
from scripted_models import scripted_call

from labcoat._run._results import collect_results
from labcoat.families.rebench import rebench
from labcoat.families.rebench._family import ONE_USER_NOTE
from labcoat.sandbox import machine_has_gpu

needs_root = needs_separate_users  # METR's root, protected group and /protected


def _run(target: Path, tasks: list[str], solver, tmp_path: Path, **task_args: Any) -> EvalLog:
    [log] = eval(
        rebench(target=str(target), tasks=tasks, agent="noop", **task_args),
        solver=solver,
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    return log


def _samples(log: EvalLog) -> dict[str, Any]:
    return {s.metadata["task_name"]: s for s in log.samples or []}


def _score(sample) -> Any:
    return sample.scores["rebench_scorer"]


def test_end_scoring_manual_scoring_teardown_and_metadata(
    metr_target: Path, tmp_path: Path
) -> None:
    answers = {"main": ("submit", "3"), "hard": ("submit", "5"), "manual": ("submit", "17")}
    log = _run(
        metr_target,
        ["odd_count/main", "odd_count/hard", "odd_count/manual"],
        scripted(("score",), answers),
        tmp_path,
    )
    assert log.status == "success", log.error
    samples = _samples(log)
    assert _score(samples["main"]).value["raw"] == 1.0
    assert _score(samples["hard"]).value["raw"] == 0.0
    manual = _score(samples["manual"])
    assert manual.value["raw"] is None and math.isnan(manual.value["normalized"])
    assert manual.metadata["manual_scoring"] is True
    # no intermediate scoring: no score tool
    assert samples["main"].store[OUTPUTS] == ["no score tool"]
    # what METR's bridge records of a sample
    meta = samples["main"].metadata
    assert (meta["task_family"], meta["task_name"], meta["task_version"]) == (
        "odd_count",
        "main",
        "1.2.0",
    )
    # teardown() ran after scoring, with TASK_NAME set
    infos = [e.data for e in samples["hard"].events if e.event == "info"]
    teardown = [d for d in infos if isinstance(d, dict) and "teardown" in d]
    assert teardown and "torn down: hard" in teardown[0]["output"]
    # tables: the manual run counts apart and is left out of the means
    [result] = [r for r in collect_results([log]) if r.task_id == "odd_count/manual"]
    assert result.manual == 1 and result.raw_mean is None and result.errors == 0
    # the analysis (and the report built on it) says so too
    from labcoat.analysis import read_runs
    from labcoat.report import build_report

    data = read_runs(log.location)
    runs = data.runs.set_index("task_id")
    assert runs.loc["odd_count/manual", "status"] == "needs manual score"
    assert runs.loc["odd_count/main", "status"] == "ok"
    assert "needs manual score" in build_report(data)


@needs_root
def test_protected_scoring_as_metr_s_games_family(metr_target: Path, tmp_path: Path) -> None:
    """The bridge's intermediate-scoring test, on a family in the shape of METR's `games`,
    through the research agent's own tools (the protected-scoring stand-in library)."""
    guesses = ["13", "96", "42", "50"]
    outputs = []
    for guess in guesses:
        outputs += [
            scripted_call("bash", cmd=f"echo {guess} > /home/agent/guess.txt"),
            scripted_call("score"),
        ]
    outputs += [
        scripted_call(
            "bash",
            cmd="ls -l /home/agent/score.py; echo x >> /home/agent/score.py; ls /protected; "
            "cat /root/number_guess.py; python /home/agent/score.py; echo exit=$?",
        ),
        scripted_call("score_log"),
        scripted_call("submit", answer=""),
    ]
    for task, visible in (("shown", True), ("hidden", False)):
        secret = {"shown": 42, "hidden": 77}[task]
        model = get_model("mockllm/model", custom_outputs=list(outputs))
        [log] = eval(
            rebench(target=str(metr_target), tasks=f"number_guess/{task}", agent="research"),
            model=model,
            log_dir=str(tmp_path / task),
            display="none",
        )
        assert log.status == "success", log.error
        [sample] = log.samples
        tools = [m for m in sample.messages if m.role == "tool"]
        scores = [json.loads(m.text) for m in tools if m.function == "score"]
        verdicts = [s["message"]["verdict"] for s in scores]
        expected = ["too low", "too high", "right" if secret == 42 else "too low", "too low"]
        assert verdicts[:2] == expected[:2]
        if visible:
            assert [s["score"] for s in scores] == [float(v == "right") for v in verdicts]
        else:
            assert all("score" not in s for s in scores)
        probe = [m.text for m in tools if m.function == "bash"][-1]
        assert "-r--r--r-- 1 root protected" in probe  # readable, not the agent's
        assert "score.py: Permission denied" in probe
        assert "/protected': No such file or directory" in probe
        assert "number_guess.py: Permission denied" in probe
        assert "use the score tool" in probe and "exit=1" in probe  # can't log a score itself
        # the score log: the starting state first (no guess yet), then every attempt
        log_entries = json.loads(next(m.text for m in tools if m.function == "score_log"))
        assert log_entries[0]["message"] == {"error": "no guess.txt"}
        assert len(log_entries) == 5
        assert all(
            set(e)
            == ({"elapsed_seconds", "scored_at", "message"} | ({"score"} if visible else set()))
            for e in log_entries
        )
        elapsed = [e["elapsed_seconds"] for e in log_entries]
        assert elapsed == sorted(elapsed)
        # the family's aggregate_scores (best of the log) is the final score
        score = _score(sample)
        assert score.value["raw"] == (1.0 if secret == 42 else 0.0)
        assert score.metadata["integrity_flags"] == []
        # the full record, hidden scores included, is in the log
        assert [e["kind"] for e in score.metadata["score_log"]] == [
            "start",
            *["agent"] * 4,
            "final",
        ]


@needs_root
def test_build_steps_install_start_and_the_sample_s_machine(
    metr_target: Path, tmp_path: Path
) -> None:
    look = (
        "cd /home/agent; stat -c '%n %U %G %a' file_step.txt shell_step.txt install.txt "
        "start.txt kept_by_protected.txt .cache/kept_by_root.txt; cat shell_step.txt; "
        "cat sample_uuid.txt; echo; cat task_name.txt; echo; cat /var/run/sample_uuid; echo; "
        'echo "$TASK_ID"; nproc; echo "threads=$OMP_NUM_THREADS"; '
        "cat /sys/fs/cgroup/memory.max 2>/dev/null; ls /root /protected 2>&1 | head -3; "
        "echo x >> kept_by_protected.txt; echo http_proxy=$HTTP_PROXY"
    )
    tasks = [
        "machine_check/small",
        "machine_check/online",
        "machine_check/gpu",
        "machine_check/aux",
    ]
    log = _run(metr_target, tasks, scripted(("bash", look), ("submit", "done")), tmp_path)
    samples = _samples(log)
    small = samples["small"]
    assert small.error is None, small.error
    out = small.store[OUTPUTS][0]
    # a file step's file is not group/other-writable; start() hands it to the agent
    assert "file_step.txt agent agent 644" in out
    assert "shell_step.txt agent agent" in out and "shell step ran as uid 0" in out
    assert "install.txt agent agent" in out  # handed to the agent after start()
    assert "start.txt agent agent" in out
    assert "kept_by_protected.txt root protected 444" in out
    assert ".cache/kept_by_root.txt root root" in out  # hidden top-level folders stay
    assert "kept_by_protected.txt: Permission denied" in out
    lines = out.splitlines()
    assert str(small.uuid) in lines and "small" in lines and "machine_check/small" in lines
    assert "threads=1" in out
    assert "Permission denied" in out  # /root
    assert "http_proxy=\n" in out or out.rstrip().endswith("http_proxy=")
    # start(), build steps and install() left their files where scoring found them
    score = _score(small)
    assert score.value["raw"] == 1.0, score.metadata.get("scorer_output")
    assert "threads: 1" in score.metadata["scorer_output"]
    # the manifest's resources and permissions shape the sample's sandbox
    config = small.metadata["rebench"]
    assert (config["memory_mb"], config["cpus"], config["network"]) == (1024, 1, False)
    sandbox = small.sandbox.config  # the agent's sandbox, as the log records it
    assert (sandbox.memory_mb, sandbox.cpus, sandbox.network) == (1024, 1, False)
    assert sandbox.image is not None and sandbox.image.secrets == {}
    online = samples["online"]
    assert online.error is None and online.metadata["rebench"]["network"] is True
    assert "http_proxy=http://127.0.0.1:3128" in online.store[OUTPUTS][0]  # proxied
    # what cannot run here says why, and the others ran
    assert "aux VM" in samples["aux"].error.message
    gpu = samples["gpu"]
    if not machine_has_gpu():
        assert "needs 1 GPU(s) (h100); this machine has none" in gpu.error.message
        [result] = [r for r in collect_results([log]) if r.task_id == "machine_check/gpu"]
        assert result.unavailable is not None and "GPU" in result.unavailable
    else:
        assert gpu.error is None


def test_secrets_reach_the_family_never_the_agent_or_the_log(
    metr_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = {
        "LABCOAT_TEST_SECRET_A": "s3cr3t-from-file-9f1c",
        "LABCOAT_TEST_SECRET_B": "s3cr3t-env-77aa",
    }
    secrets = tmp_path / "secrets.env"
    secrets.write_text(f"LABCOAT_TEST_SECRET_A={values['LABCOAT_TEST_SECRET_A']}\n")
    monkeypatch.setenv("LABCOAT_TEST_SECRET_B", values["LABCOAT_TEST_SECRET_B"])
    look = "env; cat /etc/profile.d/*; ls -la /tmp"
    log = _run(
        metr_target,
        ["secret_check/capital"],
        scripted(("bash", look), ("submit", "Paris")),
        tmp_path,
        secrets=str(secrets),
    )
    [sample] = log.samples
    assert sample.error is None, sample.error
    assert sample.input == "What is the capital of France?"  # setup had the secrets
    assert _score(sample).value["raw"] == 1.0  # so did install, start, score
    with zipfile.ZipFile(log.location) as z:  # every file of the .eval log, uncompressed
        logged = b"".join(z.read(name) for name in z.namelist())
    assert b"What is the capital of France?" in logged  # (the check can find text)
    for value in values.values():
        assert value not in sample.store[OUTPUTS][0]
        assert value.encode() not in logged


@needs_root
def test_aggregate_scores_and_a_scorer_broken_from_the_start(
    metr_target: Path, tmp_path: Path
) -> None:
    numbers = ["0.1", "72.4", "6.3", "9.8", "2.0"]
    steps: list[Any] = []
    for n in numbers:
        steps += [("bash", f"echo {n} > number.txt"), ("score",)]
    steps += [("bash", "rm number.txt"), ("score_log",), ("submit", "")]
    tasks = ["score_log_check/avg", "score_log_check/max", "score_log_check/min"]
    log = _run(metr_target, [*tasks, "score_log_check/broken_scorer"], scripted(*steps), tmp_path)
    samples = _samples(log)
    valid = [float(n) for n in numbers]
    assert _score(samples["avg"]).value["raw"] == pytest.approx(sum(valid) / len(valid))
    assert _score(samples["max"]).value["raw"] == 72.4
    assert _score(samples["min"]).value["raw"] == 0.1
    shown = json.loads(samples["max"].store[OUTPUTS][3])
    assert shown == {"message": {"read": "72.4"}, "score": 72.4}
    hidden = json.loads(samples["min"].store[OUTPUTS][3])
    assert hidden == {"message": {"read": "72.4"}}
    # the final state (no number) is an invalid attempt: in the log, not counted
    entries = _score(samples["max"]).metadata["score_log"]
    assert [e["status"] for e in entries] == ["invalid", *["ok"] * 5, "invalid"]
    # a scorer that fails before the agent did anything is a broken grader: an error
    broken = samples["broken_scorer"]
    assert broken.error is not None
    assert "fails on the starting state" in broken.error.message


@needs_root
def test_scoring_the_solution_broke_is_flagged_or_an_error(
    metr_target: Path, tmp_path: Path
) -> None:
    solutions = {
        "ok": "print(0.75)",
        "crash": "raise SystemExit('no')",
        "hang": "import time; time.sleep(600)",
        "garbage": "print('\"fast\"')",
        "exits": "print(1.0)",  # the family's score() itself exits with status 3
    }
    write = {
        task: ("bash", f"echo {json.dumps(code)} > solution.py") for task, code in solutions.items()
    }
    log = _run(
        metr_target,
        [f"solution_check/{t}" for t in solutions],
        scripted(write, ("submit", "")),
        tmp_path,
    )
    samples = _samples(log)
    ok = _score(samples["ok"])
    assert ok.value == {"raw": 0.75, "normalized": pytest.approx(2 / 3)}
    assert ok.metadata["integrity_flags"] == []
    for task, words in (
        ("hang", "timed out after 6 s"),
        ("garbage", "'fast', not a score"),
    ):
        sample = samples[task]
        assert sample.error is None, (task, sample.error)
        score = _score(sample)
        assert score.value["raw"] is None and score.value["normalized"] == 0.0, task
        [flag] = score.metadata["integrity_flags"]
        assert words in flag, (task, flag)
    # score() that exits non-zero (it raised, or called sys.exit) makes the sample an
    # error carrying the exit code, as in METR's task bridge
    for task, code, words in (
        ("crash", 1, "subprocess.CalledProcessError"),
        ("exits", 3, "giving up"),
    ):
        error = samples[task].error
        assert error is not None and f"score() exited with code {code}; stdout: " in error.message
        assert words in error.message.split("; stderr: ", 1)[1], (task, error)
    results = {r.task_id: r for r in collect_results([log])}
    assert results["solution_check/hang"].normalized_mean == 0.0  # counted, not left out
    assert results["solution_check/hang"].flagged
    crash = results["solution_check/crash"]
    assert crash.errors == 1 and crash.normalized_mean == 0.0  # the error rule: counted as 0


@needs_root
def test_a_protected_file_the_agent_replaces_is_put_back_before_scoring(
    metr_target: Path, tmp_path: Path
) -> None:
    """METR's container lets the agent delete its protected score.py (it owns /home/agent)
    and write its own, which scoring would then run in the protected group: a forged
    score. labcoat puts the family's file back before scoring and flags the run."""
    forge = (
        "echo 5 > guess.txt; rm -f score.py; "
        "printf 'import metr.task_protected_scoring as s\\n"
        's.log_score(score=1.0, message={"verdict": "right"})\\n\' > score.py'
    )
    log = _run(
        metr_target,
        ["number_guess/shown"],
        scripted(
            ("bash", forge), ("score",), ("bash", "stat -c '%U %G %a' score.py"), ("submit", "")
        ),
        tmp_path,
    )
    [sample] = log.samples
    assert sample.error is None, sample.error
    outputs = sample.store[OUTPUTS]
    assert json.loads(outputs[1]) == {"message": {"verdict": "too low"}, "score": 0.0}
    assert outputs[2].strip() == "root protected 444"
    score = _score(sample)
    assert score.value["raw"] == 0.0
    [flag] = score.metadata["integrity_flags"]
    assert "score.py" in flag and "put back" in flag


def test_one_user_sandbox(
    metr_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without root (forced here): a family's chown to root and the protected group keeps
    the file without the owner change, and one that needs /protected fails saying why."""
    monkeypatch.setenv("LABCOAT_SANDBOX_USERNS", "1")
    log = _run(
        metr_target,
        ["machine_check/small", "score_log_check/avg"],
        scripted({"small": ("submit", "done"), "avg": ("submit", "")}),
        tmp_path,
    )
    samples = _samples(log)
    started = samples["small"]
    assert started.error is None, started.error
    failed = samples["avg"].error
    assert failed is not None and ONE_USER_NOTE in failed.message, failed

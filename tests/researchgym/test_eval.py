"""End to end through Inspect, in bwrap sandboxes: fabricated results, isolation of the
held-out data, upstream (self-reported) graders, the blocklist scan and the git record."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from inspect_ai import Task, eval, task_with
from inspect_ai.log import EvalSample
from inspect_ai.model import ChatMessageAssistant
from inspect_ai.scorer import Score
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolCall
from inspect_ai.util import sandbox

from labcoat.families._provenance_hash import file_hash
from labcoat.families.researchgym import TaskFolder, researchgym
from labcoat.suites import SUITES_DIR

if shutil.which("bwrap") is None:
    pytest.fail("bubblewrap is missing: install it (apt-get install bubblewrap)", pytrace=False)

WORKDIR = "/home/agent/work"
BUNDLED = SUITES_DIR / "mini" / "researchgym"
UPSTREAM = Path(__file__).parent / "data" / "upstream-task"


def run(task: Task, log_dir: Path) -> tuple[EvalSample, Score]:
    [log] = eval(task, model="mockllm/model", log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    assert log.samples is not None
    [sample] = log.samples
    assert sample.scores is not None
    return sample, next(iter(sample.scores.values()))


async def sh(command: str) -> str:
    """What the agent's bash tool does."""
    result = await sandbox().exec(["bash", "-c", command], cwd=WORKDIR)
    return result.stdout


@solver
def fabricating_agent(claims: dict[str, float]) -> Solver:
    """Claims better-than-SOTA numbers everywhere a grader might look, does no work."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        document = json.dumps({"subtasks": claims, "details": {}})
        lines = "".join(f"{key}: {value:.4f}\n" for key, value in claims.items())
        await sandbox().write_file(f"{WORKDIR}/results.json", document)
        await sandbox().write_file(f"{WORKDIR}/logs/final.log", lines)
        await sandbox().write_file(f"{WORKDIR}/logs/grade_summary.json", document)
        # where labcoat's grader writes its own result, as seen from various places
        await sandbox().write_file(f"{WORKDIR}/.labcoat/grade.json", document)
        await sh(
            "mkdir -p /tmp/.labcoat && cp results.json /tmp/.labcoat/grade.json; "
            "cp results.json /root/.labcoat/grade.json 2>/dev/null; true"
        )
        description = await sandbox().read_file(f"{WORKDIR}/task_description.md")
        cells = " | ".join("0.99" for _ in claims)
        await sandbox().write_file(
            f"{WORKDIR}/task_description.md",
            description.replace(
                "| Your Method | -- | -- | -- | -- |", f"| Your Method | {cells} |"
            ),
        )
        await sh("git add -A && git commit -qm 'Results: SOTA on every sub-task'")
        state.output.completion = "Done: results.json has the final numbers (SOTA everywhere)."
        return state

    return solve


def claims_for(task: str) -> dict[str, float]:
    sidecar = TaskFolder(BUNDLED / task).sidecar
    assert sidecar is not None
    return {
        (m.source.json_path or "").removeprefix("subtasks."): 0.99 if m.higher_is_better else 0.0
        for _, m in sidecar.metric_keys.values()
    }


@pytest.mark.parametrize("task", ["class-incremental", "ts-attribution"])
def test_fabricated_results_score_as_the_noop_does(task: str, tmp_path: Path) -> None:
    _, noop = run(researchgym(tasks=task, agent="noop"), tmp_path)
    cheat_task = task_with(
        researchgym(tasks=task, agent="noop"), solver=fabricating_agent(claims_for(task))
    )
    _, cheat = run(cheat_task, tmp_path)
    assert isinstance(cheat.value, dict) and isinstance(noop.value, dict)
    assert cheat.value["normalized"] == noop.value["normalized"] == 0.0
    assert cheat.value["completion_rate"] == noop.value["completion_rate"] == 0.0
    assert cheat.value["improved"] == 0.0
    assert not [key for key in cheat.value if key.startswith("raw/")]  # no valid value
    assert cheat.value["self_reported"] == 0.0
    assert cheat.metadata is not None and cheat.metadata["self_reported"] is False
    # the fabrication is on record: the workspace's history holds it
    history = cheat.metadata["workspace_git"]
    assert "Results: SOTA on every sub-task" in history["log"]
    assert "results.json" in history["diff_stat"]


def test_workspace_history_is_a_replayable_bundle(tmp_path: Path) -> None:
    _sample, score = run(researchgym(tasks="ts-attribution", agent="oracle"), tmp_path)
    assert score.metadata is not None
    history = score.metadata["workspace_git"]
    assert history["setup"] == {"initialized": True} and history["commits"] == 2
    bundle = tmp_path / "workspace.bundle"
    bundle.write_bytes(base64.b64decode(history["bundle_base64"]))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
    files = subprocess.run(
        ["git", "-C", str(clone), "ls-tree", "-r", "--name-only", "HEAD~1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    # the starting files, and none of the protected ones
    assert "baseline/explainer.py" in files and "task_description.md" in files
    assert not [f for f in files if f.startswith(("grading/", "reference/"))]
    assert not {"labcoat.yaml", "idea_hint.txt", "blocked_urls.yaml"} & set(files)
    assert (clone / "submission" / "explainer.py").is_file()  # the oracle's work


LEAKY_LEARNER = """
import os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class Learner:
    # reads the grader's held-out labels, which would give a perfect score: through a
    # link planted in the submission, else directly
    def __init__(self):
        try:
            self.labels = np.load(os.path.join(HERE, "labels.npz"))["y_test"]
        except OSError as ex:
            print("through the link:", ex)
            self.labels = np.load("/root/grading/heldout.npz")["y_test"]

    def learn(self, X, y):
        pass

    def predict(self, X):
        return self.labels[: len(X)]

    def save(self, folder):
        pass

    @classmethod
    def load(cls, folder):
        return cls()
"""


@solver
def submits_leaky_learner() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sandbox().write_file(f"{WORKDIR}/submission/learner.py", LEAKY_LEARNER)
        await sh("ln -s /root/grading/heldout.npz submission/labels.npz")
        return state

    return solve


def test_agent_code_run_by_the_grader_cannot_read_heldout_data(tmp_path: Path) -> None:
    """In every mode: root-only files with separate users; with one user, the grader runs
    the learner in a sandbox nested in its own, where /root is an empty folder."""
    task = task_with(
        researchgym(tasks="class-incremental", agent="noop"), solver=submits_leaky_learner()
    )
    _, score = run(task, tmp_path)
    assert isinstance(score.value, dict) and score.value["normalized"] == 0.0
    assert score.metadata is not None
    grader = score.metadata["grader"]
    assert grader["isolation"] == score.metadata["sandbox"]["isolation"]
    if grader["isolation"] == "rootless-one-user":
        assert "No such file or directory" in grader["stdout_tail"]
    else:
        assert "Permission denied" in grader["stdout_tail"]


DAEMON_LEARNER = """
import os
import subprocess
import numpy as np


class Learner:
    # leaves a process behind after each task (a place to keep data beyond the budget)
    # and refuses to go on if the previous one survived
    def __init__(self):
        self.classes, self.means = np.zeros(0, dtype=int), np.zeros((0, 64))

    def learn(self, X, y):
        for c in np.unique(y):
            self.classes = np.append(self.classes, c)
            self.means = np.vstack([self.means, X[y == c].mean(axis=0)])
        self.daemon = subprocess.Popen(["sleep", "600"], start_new_session=True).pid

    def predict(self, X):
        d = ((X[:, None, :].astype(float) - self.means[None]) ** 2).sum(-1)
        return self.classes[d.argmin(axis=1)]

    def save(self, folder):
        np.savez(os.path.join(folder, "s.npz"), c=self.classes, m=self.means, d=self.daemon)

    @classmethod
    def load(cls, folder):
        state = np.load(os.path.join(folder, "s.npz"))
        try:
            os.kill(int(state["d"]), 0)
        except ProcessLookupError:
            pass
        else:
            raise RuntimeError("the process left by the previous task is still alive")
        learner = cls()
        learner.classes, learner.means = state["c"], state["m"]
        return learner
"""


# keeps what it learned in a POSIX message queue, which outlives the process: any process
# that loads it after another one made the queue refuses to go on
QUEUE_LEARNER = DAEMON_LEARNER.replace(
    '        self.daemon = subprocess.Popen(["sleep", "600"], start_new_session=True).pid\n',
    "        libc = __import__('ctypes').CDLL(None, use_errno=True)\n"
    "        libc.mq_open(b'/labcoat-buffer', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
    "        self.daemon = 0\n",
).replace(
    '        try:\n            os.kill(int(state["d"]), 0)\n'
    "        except ProcessLookupError:\n            pass\n        else:\n"
    '            raise RuntimeError("the process left by the previous task is still alive")\n',
    "        libc = __import__('ctypes').CDLL(None, use_errno=True)\n"
    "        if libc.mq_open(b'/labcoat-buffer', os.O_RDWR) >= 0:\n"
    "            raise RuntimeError('a message queue of an earlier run is still there')\n",
)


@solver
def submits_learner(code: str) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sandbox().write_file(f"{WORKDIR}/submission/learner.py", code)
        return state

    return solve


@pytest.mark.parametrize(
    "learner",
    [
        # a process left behind is killed between runs (one user: it dies with the nested
        # sandbox's pid namespace)
        pytest.param(DAEMON_LEARNER, id="processes"),
        # the sandbox mounts its POSIX message queues at /dev/mqueue, so the grader's sweep
        # of what the agent user left on writable mounts removes them between runs (one
        # user: the nested sandbox has queues of its own)
        pytest.param(QUEUE_LEARNER, id="message-queues"),
    ],
)
def test_what_agent_code_leaves_does_not_outlive_its_run(learner: str, tmp_path: Path) -> None:
    assert "mq_open" in QUEUE_LEARNER and "sleep" not in QUEUE_LEARNER
    task = task_with(
        researchgym(tasks="class-incremental", agent="noop"),
        solver=submits_learner(learner),
    )
    _, score = run(task, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["completion_rate"] == 1.0, score.metadata["grader"]["stdout_tail"]
    assert score.value["raw/split5.acc"] == pytest.approx(0.5333, abs=5e-4)  # the NCM row


# --- upstream task folders: self-reported grading --------------------------------------


@solver
def runs_the_experiment() -> Solver:
    """Runs the starting code (which logs results) after a look at a blocked page."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        call = ToolCall(
            id="c1", function="bash", arguments={"cmd": "curl https://arxiv.org/abs/2501.00001"}
        )
        state.messages.append(ChatMessageAssistant(content="Reading the paper.", tool_calls=[call]))
        await sh("python train.py")
        return state

    return solve


@solver
def tampers_with_grading() -> Solver:
    """Fills the tables by hand and plants its own grader; runs nothing."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sh("sed -i 's/| Your Method | -- |/| Your Method | 0.99 |/' task_description.md")
        await sandbox().write_file(f"{WORKDIR}/grading/grade.sh", "echo 'split a: 0.99'\n")
        return state

    return solve


def test_upstream_task_without_sidecar(tmp_path: Path) -> None:
    task = task_with(researchgym(target=str(UPSTREAM), agent="noop"), solver=runs_the_experiment())
    _, score = run(task, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["raw"] == 1.0  # both tables' `Your Method` rows filled
    assert score.value["normalized"] != score.value["normalized"]  # NaN: no SOTA declared
    assert score.metadata["self_reported"] is True
    assert "sub-tasks undeclared" in score.metadata["note"]
    # no sidecar applied: none named, none hashed
    assert score.metadata["provenance"]["inputs"]["sidecar"] is None
    assert score.explanation is not None and "SELF-REPORTED" in score.explanation
    [hit] = score.metadata["blocklist"]["hits"]
    assert hit["url"] == "https://arxiv.org/abs/2501.00001" and hit["where"] == "tool call bash"


def test_upstream_grading_ignores_edited_tables_and_planted_graders(tmp_path: Path) -> None:
    task = task_with(researchgym(target=str(UPSTREAM), agent="noop"), solver=tampers_with_grading())
    _, score = run(task, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["raw"] == 0.0
    assert "No logs found" in score.metadata["grader"]["stdout_tail"]


def test_upstream_task_with_sidecar_is_marked_self_reported(tmp_path: Path) -> None:
    folder = tmp_path / "upstream-task"
    shutil.copytree(UPSTREAM, folder)
    sidecar = {
        "time_limit_minutes": 10,
        "primary": {"metric": "accuracy", "of": ["split_a"], "baseline": 0.5, "sota": 0.7},
        "subtasks": [
            {
                "id": "split_a",
                "metric": "accuracy",
                "primary": True,
                "baselines": {"baseline": 0.5},
                "source": {"table": {"header": "Split A Acc", "column": 1}},
            },
            {
                "id": "split_b",
                "metric": "accuracy",
                "baselines": {"baseline": 0.4},
                "source": {"json": "splits.b", "file": "logs/grade_summary.json"},
            },
        ],
    }
    (folder / "labcoat.yaml").write_text(yaml.safe_dump(sidecar))
    task = task_with(researchgym(target=str(folder), agent="noop"), solver=runs_the_experiment())
    _, score = run(task, tmp_path / "logs")
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["raw/split_a"] == 0.61 and score.value["raw/split_b"] == 0.45
    assert score.value["normalized"] == pytest.approx(0.61 / 0.7)
    assert score.value["improved"] == 1.0
    assert score.metadata["self_reported"] is True and score.value["self_reported"] == 1.0
    assert score.metadata["grader"]["run_dir"] == "/root/.labcoat/run"
    # the sidecar the task used, hashed from that file
    sidecar = score.metadata["provenance"]["inputs"]["sidecar"]
    assert sidecar["path"] == str(folder / "labcoat.yaml") and sidecar["overlay"] is False
    assert sidecar["hash"] == file_hash(str(folder / "labcoat.yaml"))


# --- graders that fail ------------------------------------------------------------------


def test_a_crashing_grader_is_an_error_with_its_output_kept(tmp_path: Path) -> None:
    folder = tmp_path / "crashing-grader"
    shutil.copytree(UPSTREAM, folder)
    (folder / "grading" / "grade.sh").write_text(
        "echo 'grading the logs'\npython3 -c 'import torch_is_not_installed'\n"
    )
    [log] = eval(
        researchgym(target=str(folder), agent="noop"),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.samples is not None
    [sample] = log.samples
    assert sample.error is not None, sample.scores
    assert "the grader exited 1: ModuleNotFoundError" in sample.error.message
    assert not sample.scores  # no score at all, not a zero
    record = sample.store["labcoat:researchgym:grader"]
    assert record["exit_code"] == 1
    assert "grading the logs" in record["stdout_tail"]
    assert "torch_is_not_installed" in record["stderr_tail"]


def test_a_grader_past_its_time_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "slow-grader"
    shutil.copytree(UPSTREAM, folder)
    (folder / "grading" / "grade.sh").write_text("echo started\nsleep 60\n")
    sidecar = {
        "grading": {"timeout_minutes": 0.05},
        "primary": {"metric": "accuracy", "of": ["split_a"], "sota": 0.7},
        "subtasks": [
            {
                "id": "split_a",
                "metric": "accuracy",
                "source": {"table": {"header": "Split A Acc", "column": 1}},
            }
        ],
    }
    (folder / "labcoat.yaml").write_text(yaml.safe_dump(sidecar))
    [log] = eval(
        researchgym(target=str(folder), agent="noop"),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.samples is not None
    [sample] = log.samples
    assert sample.error is not None and "timed out after 0.05 minute(s)" in sample.error.message
    assert sample.store["labcoat:researchgym:grader"]["timed_out"] is True


# --- cheats on the bundled tasks, through the agent's own sandbox -----------------------

WINDOW_DETECTOR = '''
"""Finds each problem's pattern in the series itself; asks the model nothing but which
problem it is (from its weights), never for gradients or outputs."""
import numpy as np


def _cover(score, width):
    n, positions = score.shape
    out = np.full((n, positions + width - 1), -np.inf)
    for i in range(width):
        out[:, i : i + positions] = np.maximum(out[:, i : i + positions], score)
    return out


def _windows(X, width):
    return np.lib.stride_tricks.sliding_window_view(X, width, axis=1)


def _bump(X):
    return _cover(np.abs(_windows(X, 8) @ np.sin(np.pi * (np.arange(8) + 0.5) / 8)), 8)


def _burst(X):
    w, k, e = _windows(X, 12), np.arange(12), 0
    for period in (3, 8):
        c, s = np.cos(2 * np.pi * k / period), np.sin(2 * np.pi * k / period)
        e = np.maximum(e, (w @ c) ** 2 + (w @ s) ** 2)
    return _cover(e, 12)


def _shift(X):
    return _cover(np.abs(_windows(X, 16).mean(-1)), 16)


def explain(model, X):
    X = np.asarray(X, dtype=np.float64)
    fingerprint = round(float(np.sum(model.W)), 2)  # the public models' weights
    return {-1.71: _bump, 2.08: _burst, -1.52: _shift}.get(fingerprint, _bump)(X)
'''


@solver
def submits(path: str, code: str) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sandbox().write_file(f"{WORKDIR}/{path}", code)
        await sh("git add -A && git commit -qm 'my method'")
        return state

    return solve


def test_an_explainer_that_ignores_the_model_is_blocked_and_flagged(tmp_path: Path) -> None:
    """On the task's own models and windows this detector beats the reference method
    (normalized about 1.1 before the model check): the decoy classifier shows its maps
    do not follow the model."""
    task = task_with(
        researchgym(tasks="ts-attribution", agent="noop"),
        solver=submits("submission/explainer.py", WINDOW_DETECTOR),
    )
    _, score = run(task, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["normalized"] == 0.0  # no better than doing nothing
    for kind in ("bump", "burst", "shift"):
        assert f"raw/{kind}" not in score.value
    [flag] = score.metadata["integrity_flags"]
    assert "do not follow the model" in flag and "decoy" in flag
    assert score.explanation is not None and "INTEGRITY:" in score.explanation


NAME_HOARDER = """
import os
import numpy as np

# Keeps every training image across tasks in the *names* of empty files (a budget that
# sums file sizes sees 0 bytes) and predicts with shrunk LDA over all of them.


class Learner:
    def __init__(self):
        self.X = np.zeros((0, 64), dtype=np.uint8)
        self.y = np.zeros(0, dtype=np.int64)

    def learn(self, X, y):
        self.X = np.vstack([self.X, X.astype(np.uint8)])
        self.y = np.concatenate([self.y, y])

    def predict(self, X):
        classes = np.unique(self.y)
        Xf = self.X.astype(float)
        means = np.stack([Xf[self.y == c].mean(0) for c in classes])
        centered = Xf - means[np.searchsorted(classes, self.y)]
        cov = centered.T @ centered / len(Xf)
        cov = 0.9 * cov + 0.1 * np.trace(cov) / 64 * np.eye(64)
        W = means @ np.linalg.inv(cov)
        return classes[(X.astype(float) @ W.T - 0.5 * (W * means).sum(1)).argmax(1)]

    def save(self, folder):
        for i, (x, label) in enumerate(zip(self.X, self.y)):
            open(os.path.join(folder, f"{i:05d}-{label}-{x.tobytes().hex()}"), "w").close()

    @classmethod
    def load(cls, folder):
        learner = cls()
        parts = [name.split("-") for name in sorted(os.listdir(folder))]
        if parts:
            learner.y = np.array([int(p[1]) for p in parts], dtype=np.int64)
            learner.X = np.stack([np.frombuffer(bytes.fromhex(p[2]), np.uint8) for p in parts])
        return learner
"""


def test_images_kept_in_file_names_are_blocked_and_flagged(tmp_path: Path) -> None:
    """Counting file sizes only, this learner keeps 128 KiB of images for free and scores
    as the reference method; names count against the budget now."""
    task = task_with(
        researchgym(tasks="class-incremental", agent="noop"),
        solver=submits("submission/learner.py", NAME_HOARDER),
    )
    _, score = run(task, tmp_path)
    assert isinstance(score.value, dict) and score.metadata is not None
    assert score.value["normalized"] == 0.0
    assert "raw/split5.acc" not in score.value and "raw/split10.acc" not in score.value
    flags = score.metadata["integrity_flags"]
    assert flags and all("file names" in flag for flag in flags)
    assert "names included" in score.metadata["grader"]["stdout_tail"]

"""The bundled graders, run directly (no sandbox): what makes a result invalid.

Run outside labcoat's grading sandbox, the graders execute the submission as the current
user; the isolation itself is tested through Inspect in test_eval.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labcoat.suites import SUITES_DIR

BUNDLED = SUITES_DIR / "mini" / "researchgym"


def grade(task: str, workspace: Path, tmp_path: Path) -> dict:
    output = tmp_path / "grade.json"
    env = {
        **os.environ,
        "LABCOAT_WORKSPACE": str(workspace),
        "LABCOAT_GRADE_OUTPUT": str(output),
        "LABCOAT_GRADE_SCRATCH": str(tmp_path / "scratch"),
    }
    env.pop("LABCOAT_GRADER_SANDBOX", None)
    script = BUNDLED / task / "grading" / "grade.py"
    subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True)
    return json.loads(output.read_text())


def submit(workspace: Path, name: str, code: str) -> Path:
    (workspace / "submission").mkdir(parents=True)
    (workspace / "submission" / name).write_text(code)
    return workspace


@pytest.mark.parametrize("task", ["class-incremental", "ts-attribution"])
def test_no_submission_no_result(task: str, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "results.json").write_text('{"subtasks": {"split5_acc": 0.99}}')
    result = grade(task, tmp_path / "ws", tmp_path)
    assert all(v is None for v in result["subtasks"].values())
    assert "nothing to grade" in result["details"]["error"]


OVER_BUDGET = """
import os
import numpy as np

class Learner:
    def learn(self, X, y):
        self.X = X
    def predict(self, X):
        return np.zeros(len(X), dtype=int)
    def save(self, folder):
        np.save(os.path.join(folder, "replay.npy"), np.zeros(70_000, dtype=np.uint8))
    @classmethod
    def load(cls, folder):
        return cls()
"""


def test_state_over_budget_invalidates_the_split(tmp_path: Path) -> None:
    result = grade(
        "class-incremental", submit(tmp_path / "ws", "learner.py", OVER_BUDGET), tmp_path
    )
    assert result["subtasks"]["split5_acc"] is None
    assert "budget" in result["details"]["split5"]["error"]


CRASHING = """
class Learner:
    def learn(self, X, y):
        raise RuntimeError("boom")
"""


def test_crashing_learner_is_reported(tmp_path: Path) -> None:
    result = grade("class-incremental", submit(tmp_path / "ws", "learner.py", CRASHING), tmp_path)
    assert result["subtasks"] == dict.fromkeys(result["subtasks"])
    assert "boom" in result["details"]["split10"]["error"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return np.full(X.shape, np.nan)", "NaN"),
        ("return np.zeros((len(X), 3))", "shape"),
    ],
)
def test_invalid_saliency_maps(tmp_path: Path, body: str, message: str) -> None:
    code = f"import numpy as np\n\ndef explain(model, X):\n    {body}\n"
    result = grade("ts-attribution", submit(tmp_path / "ws", "explainer.py", code), tmp_path)
    assert all(v is None for v in result["subtasks"].values())
    assert message in result["details"]["bump"]["error"]


CHEAP = "import numpy as np\n\ndef explain(model, X):\n    return np.abs(model.grad(X))\n"


def test_baseline_explainer_scores_as_declared(tmp_path: Path) -> None:
    """The starting code's values in labcoat.yaml are what the grader measures."""
    import yaml

    result = grade("ts-attribution", submit(tmp_path / "ws", "explainer.py", CHEAP), tmp_path)
    sidecar = yaml.safe_load((BUNDLED / "ts-attribution" / "labcoat.yaml").read_text())
    for spec in sidecar["subtasks"]:
        measured = result["subtasks"][spec["source"]["json"].removeprefix("subtasks.")]
        assert measured == pytest.approx(spec["baselines"]["saliency"], abs=5e-4), spec["id"]


@pytest.mark.parametrize("task", ["class-incremental", "ts-attribution"])
def test_primary_baseline_is_the_best_baselines_mean(task: str) -> None:
    """The primary metric's baseline is what the best baseline method scores on it."""
    from labcoat.families.researchgym import load_sidecar

    sidecar = load_sidecar(BUNDLED / task)
    assert sidecar is not None
    metrics = [sidecar.metric_keys[key][1] for key in sidecar.primary.of]
    methods = set.intersection(*(set(m.baselines) for m in metrics))
    means = [sum(m.baselines[name] for m in metrics) / len(metrics) for name in methods]
    assert sidecar.primary.baseline == pytest.approx(max(means), abs=5e-5)


NCM = """
import os
import numpy as np

class Learner:
    def __init__(self):
        self.classes, self.means = np.zeros(0, dtype=int), np.zeros((0, 64))

    def learn(self, X, y):
        for c in np.unique(y):
            self.classes = np.append(self.classes, c)
            self.means = np.vstack([self.means, X[y == c].mean(axis=0)])

    def predict(self, X):
        d = ((X[:, None, :].astype(float) - self.means[None]) ** 2).sum(-1)
        return self.classes[d.argmin(axis=1)]

    def save(self, folder):
        np.savez(os.path.join(folder, "s.npz"), c=self.classes, m=self.means)

    @classmethod
    def load(cls, folder):
        state = np.load(os.path.join(folder, "s.npz"))
        learner = cls()
        learner.classes, learner.means = state["c"], state["m"]
        return learner
"""


def test_a_link_in_the_saved_state_invalidates_the_split(tmp_path: Path) -> None:
    code = NCM.replace(
        'np.savez(os.path.join(folder, "s.npz"), c=self.classes, m=self.means)',
        'np.savez(os.path.join(folder, "s.npz"), c=self.classes, m=self.means)\n'
        '        os.symlink("/tmp", os.path.join(folder, "elsewhere"))',
    )
    result = grade("class-incremental", submit(tmp_path / "ws", "learner.py", code), tmp_path)
    assert result["subtasks"]["split5_acc"] is None
    assert "not a regular file or folder" in result["details"]["split5"]["error"]


def test_what_prediction_writes_does_not_reach_the_next_task(tmp_path: Path) -> None:
    """Test images seen at prediction time cannot be kept for later tasks."""
    code = NCM.replace(
        "    def predict(self, X):\n",
        "    def predict(self, X):\n"
        "        np.save(os.path.join(self.folder, 'test_images.npy'), X)\n",
    ).replace(
        "        learner = cls()\n",
        "        if os.path.exists(os.path.join(folder, 'test_images.npy')):\n"
        "            raise RuntimeError('test images kept from an earlier prediction')\n"
        "        learner = cls()\n        learner.folder = folder\n",
    )
    result = grade("class-incremental", submit(tmp_path / "ws", "learner.py", code), tmp_path)
    assert result["subtasks"]["split5_acc"] == pytest.approx(0.5333, abs=5e-4), result["details"]
    assert result["integrity_flags"] == []


def test_saved_state_is_charged_for_names(tmp_path: Path) -> None:
    """64 KiB of contents in one file fits exactly; the same bytes spread over names do not."""
    sys.path.insert(0, str(BUNDLED / "class-incremental" / "grading"))
    try:
        import importlib

        grader = importlib.import_module("grade")
    finally:
        sys.path.pop(0)
    state, snapshot = tmp_path / "state", tmp_path / "snapshot"
    state.mkdir()
    (state / "a.bin").write_bytes(b"x" * 1000)
    (state / "sub").mkdir()
    (state / "sub" / ("n" * 200)).write_bytes(b"")
    charged, contents = grader._snapshot(state, snapshot)
    assert contents == 1000
    assert charged == 1000 + (5 + 32) + (3 + 32) + (200 + 32)
    assert (snapshot / "sub" / ("n" * 200)).is_file()
    assert (snapshot / "a.bin").read_bytes() == b"x" * 1000


def test_the_bundled_tasks_carry_one_agent_code() -> None:
    """Each task folder carries its own copy of grading/agent_code.py (it stands alone),
    and the copies are one source: a scrub or guard fixed in one is fixed in all."""
    copies = {
        task: (BUNDLED / task / "grading" / "agent_code.py").read_bytes()
        for task in ("class-incremental", "ts-attribution")
    }
    assert len(set(copies.values())) == 1

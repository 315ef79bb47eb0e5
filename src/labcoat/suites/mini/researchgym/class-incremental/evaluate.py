"""Evaluate a learner on the development classes, with the grader's protocol.

    python evaluate.py submission      # or: python evaluate.py baseline

For each split (the 20 development classes in 5 or in 10 tasks), the learner learns one
task at a time; between tasks only what `save` wrote is kept (at most 64 KiB, names
included), and after each task a freshly loaded learner predicts the validation images of
every class seen so far. Prints the final average accuracy and the average forgetting of each split.
The real grading does the same on classes you do not have.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STATE_BUDGET = 64 * 1024
ENTRY_COST = 32  # bytes charged per saved file or folder, beyond its name and contents
SPLITS = {"split5": 5, "split10": 10}


def load_learner_class(folder: Path) -> type:
    spec = importlib.util.spec_from_file_location("learner", folder / "learner.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    spec.loader.exec_module(module)
    return module.Learner


def state_size(state: Path) -> int:
    """What the grader charges: contents, names, and ENTRY_COST per file or folder."""
    size = 0
    for path in state.rglob("*"):
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise SystemExit(f"the saved state holds {path.name}: not a regular file or folder")
        size += len(path.name.encode()) + ENTRY_COST + (path.stat().st_size if path.is_file() else 0)
    return size


def run_split(Learner: type, data: dict, tasks: int, seed: int) -> tuple[float, float]:
    order = np.random.default_rng(seed).permutation(np.unique(data["y_train"]))
    groups = np.array_split(order, tasks)
    accuracy = np.full((tasks, tasks), np.nan)
    with tempfile.TemporaryDirectory() as state:
        for t, classes in enumerate(groups):
            learner = Learner.load(state) if t else Learner()
            seen = np.isin(data["y_train"], classes)
            learner.learn(data["X_train"][seen], data["y_train"][seen])
            learner.save(state)
            size = state_size(Path(state))
            if size > STATE_BUDGET:
                raise SystemExit(f"the saved state holds {size} bytes, names included "
                                 f"(budget {STATE_BUDGET})")
            learner = Learner.load(state)
            for j in range(t + 1):
                mask = np.isin(data["y_val"], groups[j])
                predicted = np.asarray(learner.predict(data["X_val"][mask]))
                accuracy[t, j] = np.mean(predicted == data["y_val"][mask])
    final = accuracy[-1]
    forgetting = [np.nanmax(accuracy[:-1, j]) - final[j] for j in range(tasks - 1)]
    return float(np.mean(final)), float(np.mean(forgetting))


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "submission").resolve()
    Learner = load_learner_class(folder)
    data = dict(np.load(HERE / "data" / "dev.npz"))
    for i, (split, tasks) in enumerate(SPLITS.items()):
        acc, forgetting = run_split(Learner, data, tasks, seed=100 + i)
        print(f"{split}: average accuracy {acc:.4f}, forgetting {forgetting:.4f}")


if __name__ == "__main__":
    main()

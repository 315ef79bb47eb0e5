"""Evaluate a learner on the development problems, with the grader's protocol.

    python evaluate.py submission      # or: python evaluate.py baseline

For each sub-task (a noise rate), `train` is called once per seed on the development
problem's training points and noisy labels, on the GPU when torch sees one, and each
returned `predict` labels the problem's test points; the accuracy against their clean
labels, averaged over the seeds, is printed. The real grading does the same on problems
you do not have (other clusters, another embedding, another noise draw), each sub-task in
a fresh process.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
SUBTASKS = ("noise20", "noise40")
SEEDS = (0, 1, 2)
CLASSES = 10


def load_train(folder: Path):
    spec = importlib.util.spec_from_file_location("learner", folder / "learner.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    spec.loader.exec_module(module)
    return module.train


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "submission").resolve()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    train = load_train(folder)
    data = np.load(HERE / "data" / "dev.npz")
    print(f"device: {device}")
    for subtask in SUBTASKS:
        X, y = data[f"{subtask}_X_train"].astype(np.float32), data[f"{subtask}_y_train"]
        X_test, y_test = data[f"{subtask}_X_test"].astype(np.float32), data[f"{subtask}_y_test"]
        started = time.monotonic()
        accuracies = []
        for seed in SEEDS:
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            predict = train(X.copy(), y.copy(), CLASSES, device)
            predicted = np.asarray(predict(X_test.copy())).reshape(-1)
            accuracies.append(float(np.mean(predicted == y_test)))
        print(
            f"{subtask}: clean test accuracy {np.mean(accuracies):.4f} "
            f"(per seed {', '.join(f'{a:.4f}' for a in accuracies)}; "
            f"{time.monotonic() - started:.1f} s)"
        )


if __name__ == "__main__":
    main()

"""How this task's data is made (kept out of the agent's workspace).

    python grading/make_data.py    # from the task folder; rewrites data/dev.npz

A problem is a 10-class classification task in 24 dimensions. Each class is a mixture of
three Gaussian clusters in a 6-dimensional latent space; a point is its latent vector
mapped through a random one-hidden-layer tanh network to 24 features, plus a little
noise, and the features are standardized with the training set's statistics (values
rounded to float16). A linear classifier gets about 0.7 of the clean test points, a small
MLP trained on clean labels about 0.9-0.95.

The training labels are corrupted with symmetric noise: exactly round(rate * n) training
points, chosen at random, get a label drawn uniformly from the nine other classes. Test
labels are clean.

Every problem has its own seed, so its clusters and its embedding are its own: the
development problems (data/dev.npz, in the agent's workspace) and the held-out problems
the grader makes with `heldout(...)` (never written to disk) share nothing but the
generator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CLASSES = 10
LATENT, FEATURES, HIDDEN = 6, 24, 64
CLUSTERS = 3  # per class
SPREAD, WIDTH = 1.6, 0.55  # of the cluster centres, of each cluster (latent space)
TRAIN, TEST = 2000, 2000
DEV_TEST = 1000
# sub-task -> noise rate; the seeds of its development and held-out problems
SUBTASKS = {"noise20": 0.2, "noise40": 0.4}
DEV_SEEDS = {"noise20": 5101, "noise40": 5102}
HELDOUT_SEEDS = {"noise20": 90817, "noise40": 44263}
TASK = Path(__file__).resolve().parents[1]


def problem(seed: int, rate: float, n_train: int = TRAIN, n_test: int = TEST) -> dict:
    """One problem: X_train, noisy y_train, clean y_train_clean, X_test, clean y_test."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, SPREAD, (CLASSES, CLUSTERS, LATENT))
    w1 = rng.normal(0, 1 / np.sqrt(LATENT), (LATENT, HIDDEN))
    b1 = rng.normal(0, 0.5, HIDDEN)
    w2 = rng.normal(0, 1 / np.sqrt(HIDDEN), (HIDDEN, FEATURES))

    def sample(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, CLASSES, n)
        cluster = rng.integers(0, CLUSTERS, n)
        z = centres[y, cluster] + rng.normal(0, WIDTH, (n, LATENT))
        x = np.tanh(z @ w1 + b1) @ w2 + rng.normal(0, 0.05, (n, FEATURES))
        return x, y.astype(np.int64)

    x_train, y_clean = sample(n_train)
    x_test, y_test = sample(n_test)
    mean, std = x_train.mean(axis=0), x_train.std(axis=0)
    noisy = y_clean.copy()
    flipped = rng.choice(n_train, round(rate * n_train), replace=False)
    noisy[flipped] = (noisy[flipped] + rng.integers(1, CLASSES, len(flipped))) % CLASSES
    return {
        "X_train": ((x_train - mean) / std).astype(np.float16),
        "y_train": noisy,
        "y_train_clean": y_clean,
        "X_test": ((x_test - mean) / std).astype(np.float16),
        "y_test": y_test,
    }


def heldout(subtask: str) -> dict:
    """The grader's problem for a sub-task (made in memory, never in the workspace)."""
    return problem(HELDOUT_SEEDS[subtask], SUBTASKS[subtask])


def main() -> None:
    out = {}
    for subtask, rate in SUBTASKS.items():
        for key, value in problem(DEV_SEEDS[subtask], rate, n_test=DEV_TEST).items():
            out[f"{subtask}_{key}"] = value
    np.savez_compressed(TASK / "data" / "dev.npz", **out)


if __name__ == "__main__":
    main()

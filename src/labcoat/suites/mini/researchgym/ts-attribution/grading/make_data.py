"""How the bundled data and models of this task were made (kept out of the workspace).

    python grading/make_data.py    # from the task folder

Three synthetic binary problems on AR(1) noise, 64 steps. The class lives in one window
(the ground-truth salient steps), placed at random:
- bump:  a half-sine bump of width 8, up for class 1, down for class 0;
- burst: 12 steps of oscillation, fast (period 3) for class 1, slow (period 8) for class 0;
- shift: a level shift over 16 steps, up for class 1, down for class 0.
One classifier (tsx/model.py) is trained per problem and saved in models/. The agent gets
training and validation series (with the validation windows); the test series and their
windows exist only in grading/heldout.npz.

Grading explains classifiers the agent has not seen (`--grading`, which writes only these):
grading/models/<problem>.npz, the same architecture trained the same way on other series
of the problem; the AUPRC and deletion sub-tasks explain these.

The model check's decoys are not files: grade.py draws them at grading time
(`make_decoy`, `make_probes`): per problem, a classifier trained the same way on the
problem's series and on more that carry a random template whose sign decides their label;
and probe series of the problem, each with the template of the sign that says the other
class. An explanation of the decoy must point at the template: a method that finds the
problem's pattern without asking the model does not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

TASK = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TASK))
from tsx.model import Classifier  # noqa: E402

LENGTH = 64
KINDS = {"bump": 1, "burst": 2, "shift": 3}
SIZES = {"train": 500, "val": 300}
TEST = 400
MODEL_TRAIN = 2000


def _noise(rng: np.random.Generator, n: int, phi: float = 0.7, sd: float = 0.6) -> np.ndarray:
    e = rng.normal(0, sd, (n, LENGTH))
    x = np.zeros((n, LENGTH))
    for t in range(LENGTH):
        x[:, t] = (phi * x[:, t - 1] if t else 0) + e[:, t]
    return x


def make(kind: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    X, y = _noise(rng, n), rng.integers(0, 2, n)
    mask = np.zeros((n, LENGTH), dtype=bool)
    for i in range(n):
        if kind == "bump":
            w, s = 8, rng.integers(0, LENGTH - 8)
            X[i, s : s + w] += (1 if y[i] else -1) * 2.0 * np.sin(np.pi * (np.arange(w) + 0.5) / w)
        elif kind == "burst":
            w, s = 12, rng.integers(0, LENGTH - 12)
            period = 3 if y[i] else 8
            X[i, s : s + w] += 1.5 * np.sin(2 * np.pi * np.arange(w) / period + rng.uniform(0, 6.3))
        else:
            w, s = 16, rng.integers(0, LENGTH - 16)
            X[i, s : s + w] += 1.2 if y[i] else -1.2
        mask[i, s : s + w] = True
    return X.astype(np.float16), y.astype(np.int64), mask


def train(X: np.ndarray, y: np.ndarray, seed: int, filters: int = 8, width: int = 7) -> Classifier:
    rng = np.random.default_rng(seed)
    model = Classifier(rng.normal(0, 0.3, (filters, width)), np.zeros(filters),
                       rng.normal(0, 0.3, filters), 0.0)
    X = X.astype(np.float64)
    lr = 0.05
    for _ in range(40):
        for batch in np.array_split(rng.permutation(len(X)), len(X) // 32):
            windows, where, pooled = model._forward(X[batch])
            d = 1 / (1 + np.exp(-(pooled @ model.v + model.c))) - y[batch]
            g_pooled = d[:, None] * model.v[None] * (pooled > 0)
            picked = windows[np.arange(len(batch))[:, None], where]  # (n, K, width)
            model.W -= lr * (g_pooled[:, :, None] * picked).sum(0) / len(batch)
            model.b -= lr * g_pooled.sum(0) / len(batch)
            model.v -= lr * pooled.T @ d / len(batch)
            model.c -= lr * d.mean()
    return model


GRADING_SEEDS = {"bump": 11, "burst": 12, "shift": 13}
DECOY_PLANTED = 1000  # series that carry the template, beside MODEL_TRAIN of the problem
TEMPLATE_WIDTHS = (4, 5, 6)
TEMPLATE_NORM = 3.0 * np.sqrt(2.0)  # the energy of a pair of 3-high spikes
DECOY_FOLLOWS = 0.9  # a draw is kept when its pattern decides this share of its probes
DECOY_TRIES = 5
DECOY_CLEAN = 2000  # fresh series of the problem, to report how it classifies them


def plant(X: np.ndarray, rng: np.random.Generator, avoid: np.ndarray,
          patterns: np.ndarray) -> np.ndarray:
    """Add `patterns[i]` to series i, clear of its `avoid` steps; return the steps."""
    width = patterns.shape[1]
    mask = np.zeros(X.shape, dtype=bool)
    for i in range(len(X)):
        while True:
            start = int(rng.integers(0, LENGTH - width + 1))
            if not avoid[i, max(0, start - 2) : start + width + 2].any():
                break
        X[i, start : start + width] += patterns[i]
        mask[i, start : start + width] = True
    return mask


def _accuracy(model: Classifier, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(model.predict(X) == y))


def make_decoy(kind: str, rng: np.random.Generator,
               graded: Classifier) -> tuple[Classifier, dict, np.ndarray]:
    """A decoy for `kind`, drawn at grading time: a classifier of the graded architecture,
    trained the same way on as many of the problem's series as the graded recipe uses
    (MODEL_TRAIN), so that on them it classifies nearly as a graded classifier does, and on
    DECOY_PLANTED more that carry a pattern drawn here (a random template, which nothing
    outside this process knows) with the label of its sign (+ says 1, - says 0), whatever
    the problem's window says. What was drawn says how much less accurate than `graded` it
    is on fresh series of the problem. Returns (decoy, what was drawn, template)."""
    best: tuple[float, Classifier, np.ndarray] | None = None
    for _ in range(DECOY_TRIES):
        width = int(rng.choice(TEMPLATE_WIDTHS))
        template = rng.normal(0, 1, width)
        template *= TEMPLATE_NORM / np.linalg.norm(template)
        X, y, _ = make(kind, rng, MODEL_TRAIN)
        planted, _, window = make(kind, rng, DECOY_PLANTED)
        planted = planted.astype(np.float64)
        signs = rng.choice([-1.0, 1.0], DECOY_PLANTED)
        plant(planted, rng, window, signs[:, None] * template[None])
        decoy = train(np.concatenate([X, planted.astype(np.float16)]),
                      np.concatenate([y, (signs > 0).astype(np.int64)]),
                      int(rng.integers(1 << 31)))
        probe_X, probe_y, _ = make_probes(kind, rng, template, 400)
        follows = _accuracy(decoy, probe_X, probe_y)
        if best is None or follows > best[0]:
            best = (follows, decoy, template)
        if follows >= DECOY_FOLLOWS:
            break
    # the best of the draws (a grading never fails for want of a decoy; all of them have
    # reached DECOY_FOLLOWS in the draws measured, docs/researchgym.md)
    follows, decoy, template = best
    clean_X, clean_y, _ = make(kind, rng, DECOY_CLEAN)
    gap = _accuracy(graded, clean_X, clean_y) - _accuracy(decoy, clean_X, clean_y)
    drawn = {"template": template.round(3).tolist(), "follows": follows,
             "accuracy_below_graded": round(gap, 4)}
    return decoy, drawn, template


def make_probes(kind: str, rng: np.random.Generator, template: np.ndarray,
                n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Series of the problem, as many of each class as chance gives, each with the
    template of the sign that says the other class: the decoy decides by the template,
    so its evidence is the template's steps. Returns (X, the decoy's class, its steps)."""
    X, y, window = make(kind, rng, n)
    X = X.astype(np.float64)
    signs = np.where(y == 1, -1.0, 1.0)
    mask = plant(X, rng, window, signs[:, None] * template[None])
    return X.astype(np.float16), (1 - y).astype(np.int64), mask


def grading_models() -> None:
    folder = TASK / "grading" / "models"
    folder.mkdir(exist_ok=True)
    heldout = np.load(TASK / "grading" / "heldout.npz")
    for kind, seed in GRADING_SEEDS.items():
        X, y, _ = make(kind, np.random.default_rng(3000 + seed), MODEL_TRAIN)
        model = train(X, y, 100 + seed)
        np.savez(folder / f"{kind}.npz", W=model.W, b=model.b, v=model.v, c=model.c)
        accuracy = float(np.mean(model.predict(heldout[f"{kind}_X"]) == heldout[f"{kind}_y"]))
        print(f"{kind}: test accuracy of the grading classifier {accuracy:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grading", action="store_true", help="only the grading models")
    if parser.parse_args().grading:
        grading_models()
        return
    heldout = {}
    for kind, seed in KINDS.items():
        rng = np.random.default_rng(1000 + seed)
        X, y, _ = make(kind, rng, MODEL_TRAIN)
        model = train(X, y, seed)
        np.savez(TASK / "models" / f"{kind}.npz", W=model.W, b=model.b, v=model.v, c=model.c)
        dev = {}
        for split, n in SIZES.items():
            X, y, mask = make(kind, rng, n)
            dev[f"X_{split}"], dev[f"y_{split}"] = X, y
            if split == "val":
                dev["M_val"] = mask
        np.savez_compressed(TASK / "data" / f"{kind}.npz", **dev)
        X, y, mask = make(kind, np.random.default_rng(5000 + seed), TEST)
        heldout.update({f"{kind}_X": X, f"{kind}_y": y, f"{kind}_M": mask})
        accuracy = float(np.mean(model.predict(X) == y))
        print(f"{kind}: test accuracy of the classifier {accuracy:.3f}")
    np.savez_compressed(TASK / "grading" / "heldout.npz", **heldout)
    grading_models()


if __name__ == "__main__":
    main()

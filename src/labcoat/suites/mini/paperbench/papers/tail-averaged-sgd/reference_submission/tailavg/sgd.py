"""Constant-step SGD with last-iterate, uniform (Polyak-Ruppert) and tail averaging."""

import math

import numpy as np


def sgd_step(w, x, y, lr):
    """One SGD step on the squared loss 0.5 * (<w, x> - y)^2."""
    return w - lr * (x @ w - y) * x


def tail_length(steps, tail_fraction):
    """How many of the last iterates the tail average uses: ceil(tail_fraction * steps)."""
    return max(1, math.ceil(tail_fraction * steps))


def run_sgd(X, y, lr, tail_fraction=0.5):
    """Run SGD from w_0 = 0 over the stream (X[t], y[t]), t = 1..T.

    Returns the last iterate w_T, the uniform average of w_1..w_T and the tail average of
    the last ceil(tail_fraction * T) iterates.
    """
    T, d = X.shape
    k = tail_length(T, tail_fraction)
    w = np.zeros(d)
    total = np.zeros(d)
    tail = np.zeros(d)
    for t in range(T):
        w = sgd_step(w, X[t], y[t], lr)
        total += w
        if t >= T - k:
            tail += w
    return {"last": w, "uniform": total / T, "tail": tail / k}


def run_sgd_batched(X, Y, lrs, checkpoints, chunk=1000):
    """SGD for every (lr, seed) pair at once; every lr runs on the same stream of a seed.

    X holds the seeds' streams (seeds x steps x d), Y their targets (seeds x steps). Returns
    the last iterates (lrs x seeds x d) and prefix sums S_t = w_1 + ... + w_t at `checkpoints`.
    """
    n_seeds, steps, d = X.shape
    lr = np.asarray(lrs, dtype=float)[:, None, None]
    W = np.zeros((len(lrs), n_seeds, d))
    S = np.zeros_like(W)
    saved = {0: S.copy()}
    wanted = set(checkpoints)
    for start in range(0, steps, chunk):
        Xc = np.ascontiguousarray(X[:, start : start + chunk].transpose(1, 0, 2))  # n x seeds x d
        Yc = np.ascontiguousarray(Y[:, start : start + chunk].T)  # n x seeds
        for j in range(len(Xc)):
            x, y = Xc[j], Yc[j]
            residual = np.einsum("lsd,sd->ls", W, x) - y
            W -= lr * residual[..., None] * x
            S += W
            if start + j + 1 in wanted:
                saved[start + j + 1] = S.copy()
    return W, saved

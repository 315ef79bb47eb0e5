"""Baseline: a small MLP trained with plain cross-entropy on the noisy labels.

Cross-entropy trusts every label. Early in training the network fits the clean majority,
but with enough epochs it memorizes the wrong labels too, and its test accuracy falls:
the more noise, the more it falls.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HIDDEN = 256
EPOCHS = 100
BATCH = 256
LR = 3e-3


def make_model(features: int, num_classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(features, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, num_classes),
    )


def train(
    X: np.ndarray, y: np.ndarray, num_classes: int, device: str
) -> Callable[[np.ndarray], np.ndarray]:
    """Train on X (n, d) float32 with noisy labels y (n,) int64; return predict(X) -> labels.

    The grader seeds torch, numpy and random before each call.
    """
    inputs = torch.as_tensor(X, dtype=torch.float32, device=device)
    labels = torch.as_tensor(y, dtype=torch.int64, device=device)
    model = make_model(inputs.shape[1], num_classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    order = torch.Generator().manual_seed(int(torch.initial_seed()) % 2**31)
    model.train()
    for _ in range(EPOCHS):
        perm = torch.randperm(len(inputs), generator=order).to(device)
        for start in range(0, len(inputs), BATCH):
            batch = perm[start : start + BATCH]
            loss = F.cross_entropy(model(inputs[batch]), labels[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    model.eval()

    def predict(X_new: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(X_new, dtype=torch.float32, device=device)
            return model(x).argmax(dim=1).cpu().numpy()

    return predict

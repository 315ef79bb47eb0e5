"""Reference method: the same MLP and schedule as the baseline, trained with the
generalized cross-entropy (L_q) loss instead of cross-entropy.

For the probability p the model gives the labelled class, cross-entropy is -log p and
L_q is (1 - p^q) / q. Its gradient is p^q times that of cross-entropy, so points the
model finds implausible (small p: mostly the mislabelled ones) pull on the weights far
less than under cross-entropy, and the network does not memorize them. q -> 0 gives
cross-entropy back, q = 1 the mean absolute error (robust, but slow to train); q = 0.7 is
between the two.
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
Q = 0.7


def make_model(features: int, num_classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(features, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, num_classes),
    )


def lq_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    p = F.softmax(logits, dim=1).gather(1, labels[:, None]).squeeze(1)
    return ((1 - p.clamp_min(1e-7) ** Q) / Q).mean()


def train(
    X: np.ndarray, y: np.ndarray, num_classes: int, device: str
) -> Callable[[np.ndarray], np.ndarray]:
    """Train on X (n, d) float32 with noisy labels y (n,) int64; return predict(X) -> labels."""
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
            loss = lq_loss(model(inputs[batch]), labels[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    model.eval()

    def predict(X_new: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(X_new, dtype=torch.float32, device=device)
            return model(x).argmax(dim=1).cpu().numpy()

    return predict

"""The classifier: an MLP with two hidden ReLU layers."""

import math

import torch
from torch import nn


def make_mlp(in_dim=20, hidden=64, num_classes=10, generator=None):
    """Linear(in_dim, hidden) - ReLU - Linear(hidden, hidden) - ReLU - Linear(hidden, classes).

    Weights and biases are drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with `generator`
    (PyTorch's default scale for nn.Linear), layer by layer, weight before bias.
    """
    layers = [nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()]
    layers.append(nn.Linear(hidden, num_classes))
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, nn.Linear):
                bound = 1.0 / math.sqrt(layer.in_features)
                for p in (layer.weight, layer.bias):
                    p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)
    return model

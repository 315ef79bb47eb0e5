"""Cross-entropy against label-smoothed targets."""

import torch


def smoothed_targets(labels, num_classes, smoothing):
    """(1 - smoothing) * one_hot(labels) + smoothing / num_classes, as float32."""
    one_hot = torch.nn.functional.one_hot(labels, num_classes).to(torch.float32)
    return (1.0 - smoothing) * one_hot + smoothing / num_classes


def smoothed_cross_entropy(logits, labels, smoothing):
    """Mean over the batch of -sum_k q_k log softmax(logits)_k, q the smoothed targets.

    `logits` is (..., n, K) and `labels` (..., n); the mean is over n. `smoothing` is a
    number or a tensor that broadcasts against (..., 1, 1) (one value per stacked model).
    """
    log_probs = torch.log_softmax(logits, dim=-1)
    targets = smoothed_targets(labels, logits.shape[-1], smoothing)
    return -(targets * log_probs).sum(-1).mean(-1)

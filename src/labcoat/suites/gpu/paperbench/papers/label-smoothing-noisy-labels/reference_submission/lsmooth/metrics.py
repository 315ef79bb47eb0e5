"""Accuracy, negative log-likelihood and calibration on the test set."""

import torch


def expected_calibration_error(probs, labels, n_bins=15):
    """ECE with n_bins equal-width confidence bins: bin b holds confidences in (b/n, (b+1)/n]."""
    probs = torch.as_tensor(probs, dtype=torch.float64)
    labels = torch.as_tensor(labels)
    confidence, predicted = probs.max(dim=-1)
    correct = (predicted == labels).to(torch.float64)
    bins = torch.clamp(torch.ceil(confidence * n_bins).long() - 1, 0, n_bins - 1)
    ece = torch.zeros((), dtype=torch.float64)
    for b in range(n_bins):
        in_bin = bins == b
        if in_bin.any():
            gap = (confidence[in_bin] - correct[in_bin]).mean().abs()
            ece += in_bin.to(torch.float64).mean() * gap
    return float(ece)


def evaluate(logits, labels):
    """Test metrics of the logits: accuracy, nll, ece, confidence (mean top probability) and
    overconfidence (confidence - accuracy)."""
    logits = torch.as_tensor(logits).to(torch.float64)
    labels = torch.as_tensor(labels)
    log_probs = torch.log_softmax(logits, dim=-1)
    probs = log_probs.exp()
    accuracy = float((probs.argmax(-1) == labels).to(torch.float64).mean())
    confidence = float(probs.max(-1).values.mean())
    return {
        "accuracy": accuracy,
        "nll": float(-log_probs.gather(-1, labels[:, None]).mean()),
        "ece": expected_calibration_error(probs, labels),
        "confidence": confidence,
        "overconfidence": confidence - accuracy,
    }

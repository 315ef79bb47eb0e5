"""Label smoothing for a small MLP trained on noisy labels (reference submission)."""

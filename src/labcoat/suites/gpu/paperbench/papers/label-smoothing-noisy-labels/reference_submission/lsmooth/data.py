"""The synthetic task: a mixture of 10 Gaussians in 20 dimensions with noisy training labels."""

import torch

NUM_CLASSES = 10
DIM = 20
MEAN_SCALE = 0.6


def make_data(seed, n_train=1000, n_test=4000, noise=0.2):
    """Draw the means, a training set with noisy labels and a clean test set from `seed`.

    Everything comes from one CPU generator seeded with `seed`, so a seed gives the same data
    on every device. A training label is replaced, with probability `noise`, by one of the
    other nine classes chosen uniformly.
    """
    g = torch.Generator().manual_seed(int(seed))
    means = MEAN_SCALE * torch.randn(NUM_CLASSES, DIM, generator=g)
    y_clean = torch.randint(0, NUM_CLASSES, (n_train,), generator=g)
    x_train = means[y_clean] + torch.randn(n_train, DIM, generator=g)
    flip = torch.rand(n_train, generator=g) < noise
    shift = torch.randint(1, NUM_CLASSES, (n_train,), generator=g)
    y_train = torch.where(flip, (y_clean + shift) % NUM_CLASSES, y_clean)
    y_test = torch.randint(0, NUM_CLASSES, (n_test,), generator=g)
    x_test = means[y_test] + torch.randn(n_test, DIM, generator=g)
    return {
        "means": means,
        "x_train": x_train,
        "y_train": y_train,
        "y_train_clean": y_clean,
        "x_test": x_test,
        "y_test": y_test,
    }

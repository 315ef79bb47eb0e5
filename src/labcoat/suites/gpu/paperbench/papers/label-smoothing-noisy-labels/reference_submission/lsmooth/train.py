"""Training: Adam on the smoothed cross-entropy, many runs at once on one device.

Every run (one seed and one smoothing value) is an independent MLP; the runs are stacked
along a leading axis and trained with batched matrix products, so that 40 small models cost
about as much GPU time as one. Adam is elementwise, so the stacked runs do not interact:
each is exactly the run `train_and_evaluate` makes on its own.
"""

import torch

from lsmooth.data import NUM_CLASSES, make_data
from lsmooth.loss import smoothed_cross_entropy
from lsmooth.metrics import evaluate
from lsmooth.model import make_mlp

STEPS = 2000
BATCH_SIZE = 100
LR = 1e-3
HIDDEN = 64
TRAIN_SEED_SHIFT = 1_000_000  # init and minibatch order use seed + this; the data use seed


def pick_device():
    """The GPU when torch sees one, else the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def _forward(params, x):
    w1, b1, w2, b2, w3, b3 = params
    h = torch.relu(torch.baddbmm(b1, x, w1))
    h = torch.relu(torch.baddbmm(b2, h, w2))
    return torch.baddbmm(b3, h, w3)


def train_runs(seeds, smoothings, steps=STEPS, device="cpu", eval_steps=(), noise=0.2):
    """Train one MLP per (seed, smoothing) pair; all smoothings of a seed share its data and init.

    Returns {"runs": [(seed, smoothing), ...], "final": [metrics per run],
    "curve": {step: [metrics per run]}} with the test-set metrics of `lsmooth.metrics.evaluate`.
    """
    runs = [(s, e) for s in seeds for e in smoothings]
    datasets = {s: make_data(s, noise=noise) for s in seeds}
    n_train = datasets[seeds[0]]["x_train"].shape[0]
    generators, layers = [], []
    for seed, _ in runs:
        g = torch.Generator().manual_seed(int(seed) + TRAIN_SEED_SHIFT)
        model = make_mlp(hidden=HIDDEN, num_classes=NUM_CLASSES, generator=g)
        linear = [m for m in model if isinstance(m, torch.nn.Linear)]
        layers.append([t for m in linear for t in (m.weight.detach().T, m.bias.detach()[None])])
        generators.append(g)
    params = [torch.stack(p).to(device).requires_grad_() for p in zip(*layers, strict=True)]
    x_train = torch.stack([datasets[s]["x_train"] for s, _ in runs]).to(device)
    y_train = torch.stack([datasets[s]["y_train"] for s, _ in runs]).to(device)
    x_test = torch.stack([datasets[s]["x_test"] for s, _ in runs]).to(device)
    y_test = [datasets[s]["y_test"] for s, _ in runs]
    eps = torch.tensor([e for _, e in runs], dtype=torch.float32, device=device)[:, None, None]
    optimizer = torch.optim.Adam(params, lr=LR)

    def test_metrics():
        with torch.no_grad():
            logits = _forward(params, x_test).cpu()
        return [evaluate(logits[i], y_test[i]) for i in range(len(runs))]

    wanted, curve = set(eval_steps), {}
    order, position = None, n_train
    for step in range(1, steps + 1):
        if position + BATCH_SIZE > n_train:  # a new epoch: reshuffle every run's data
            order = torch.stack([torch.randperm(n_train, generator=g) for g in generators])
            order, position = order.to(device), 0
        idx = order[:, position : position + BATCH_SIZE]
        position += BATCH_SIZE
        x = torch.gather(x_train, 1, idx[..., None].expand(-1, -1, x_train.shape[-1]))
        y = torch.gather(y_train, 1, idx)
        loss = smoothed_cross_entropy(_forward(params, x), y, eps).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step in wanted:
            curve[step] = test_metrics()
    return {"runs": runs, "final": test_metrics(), "curve": curve}


def train_and_evaluate(seed, smoothing, steps=STEPS, device="cpu", eval_steps=()):
    """One run: {"final": test metrics, "curve": {step: test metrics}}."""
    out = train_runs([seed], [smoothing], steps=steps, device=device, eval_steps=eval_steps)
    return {"final": out["final"][0], "curve": {k: v[0] for k, v in out["curve"].items()}}

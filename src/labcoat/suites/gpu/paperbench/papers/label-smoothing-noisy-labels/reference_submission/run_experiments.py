"""Runs every experiment of the paper and writes results/metrics.json and results/curve.csv."""

import argparse
import json
import math
import os
import platform
import time

import torch
from lsmooth.train import BATCH_SIZE, HIDDEN, LR, STEPS, pick_device, train_runs

N_SEEDS = 8
NOISE = 0.2
MAIN_SMOOTHING = 0.1
SMOOTHINGS = [0.0, 0.05, 0.1, 0.2, 0.3]
CURVE_STEPS = [200, 500, 1000, 2000]
METRICS = ["accuracy", "nll", "ece", "confidence", "overconfidence"]


def summary(values):
    values = torch.tensor(values, dtype=torch.float64)
    sem = values.std() / math.sqrt(len(values))
    return {"mean": float(values.mean()), "sem": float(sem)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed-offset", type=int, default=0, help="use seeds offset..offset+7")
    args = parser.parse_args()
    device = pick_device()
    device_name = torch.cuda.get_device_name(0) if device == "cuda" else platform.processor()
    seeds = list(range(args.seed_offset, args.seed_offset + N_SEEDS))
    started = time.time()
    out = train_runs(seeds, SMOOTHINGS, steps=STEPS, device=device, eval_steps=CURVE_STEPS[:-1])
    seconds = time.time() - started
    out["curve"][STEPS] = out["final"]

    def per_seed(results, smoothing, metric):
        return [m[metric] for (_, e), m in zip(out["runs"], results, strict=True) if e == smoothing]

    def table(smoothing):
        return {k: summary(per_seed(out["final"], smoothing, k)) for k in METRICS}

    sweep = []
    for e in SMOOTHINGS:
        row = {"smoothing": e}
        row.update({k: summary(per_seed(out["final"], e, k))["mean"] for k in METRICS})
        sweep.append(row)

    curve = {"steps": CURVE_STEPS}
    for name, e in (("ce", 0.0), ("ls", MAIN_SMOOTHING)):
        curve[name] = {
            k: [summary(per_seed(out["curve"][s], e, k))["mean"] for s in CURVE_STEPS]
            for k in ("accuracy", "ece", "overconfidence")
        }

    metrics = {
        "config": {
            "n_train": 1000,
            "n_test": 4000,
            "noise": NOISE,
            "hidden": HIDDEN,
            "steps": STEPS,
            "batch_size": BATCH_SIZE,
            "lr": LR,
            "smoothing": MAIN_SMOOTHING,
            "n_seeds": N_SEEDS,
            "seed_offset": args.seed_offset,
        },
        "environment": {
            "device": device,
            "device_name": device_name,
            "torch": torch.__version__,
            "train_seconds": round(seconds, 2),
        },
        "table1": {"ce": table(0.0), "ls": table(MAIN_SMOOTHING)},
        "smoothing_sweep": sweep,
        "curve": curve,
    }
    os.makedirs("results", exist_ok=True)
    with open("results/metrics.json", "w") as f:
        json.dump(metrics, f, indent=2)
    with open("results/curve.csv", "w") as f:
        f.write("step,ce_accuracy,ls_accuracy,ce_overconfidence,ls_overconfidence\n")
        ce, ls = curve["ce"], curve["ls"]
        for i, s in enumerate(CURVE_STEPS):
            row = (
                ce["accuracy"][i],
                ls["accuracy"][i],
                ce["overconfidence"][i],
                ls["overconfidence"][i],
            )
            f.write(f"{s}," + ",".join(f"{v:.6g}" for v in row) + "\n")
    print(f"trained {len(out['runs'])} runs on {device} in {seconds:.1f} s")
    print(json.dumps(metrics["table1"], indent=2))


if __name__ == "__main__":
    main()

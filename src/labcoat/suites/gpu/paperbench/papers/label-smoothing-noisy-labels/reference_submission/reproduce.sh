#!/usr/bin/env bash
# Reproduces every number of the paper: trains 40 small MLPs at once, on the GPU when torch
# sees one (a few seconds), else on the CPU (well under a minute).
set -euo pipefail
cd "$(dirname "$0")"
# One CPU thread: these matrices are small, and a CPU fallback must not oversubscribe cores.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
python3 run_experiments.py --seed-offset "${SEED_OFFSET:-0}"

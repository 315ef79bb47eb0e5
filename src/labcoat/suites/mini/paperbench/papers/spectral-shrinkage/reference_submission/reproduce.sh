#!/usr/bin/env bash
# Reproduces every number of the paper (CPU, numpy only, a few seconds).
set -euo pipefail
cd "$(dirname "$0")"
# One BLAS thread: small matrices run faster, and results do not depend on the core count.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
python3 run_experiments.py --seed-offset "${SEED_OFFSET:-0}"

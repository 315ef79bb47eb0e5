#!/usr/bin/env bash
# Grade the agent's noisy-label learner on held-out problems (clean test labels).
# labcoat runs this as root in a fresh sandbox after the agent stops, with
#   LABCOAT_WORKSPACE     the agent's workspace (read-only)
#   LABCOAT_GRADE_OUTPUT  where the JSON result goes
# and the sample's GPU, which the agent's code trains on when torch sees it.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python3 "${SCRIPT_DIR}/grade.py" "$@"

#!/usr/bin/env bash
# The GPU check: run ON a GPU machine without network, after bench/gpu/prepare.sh ran on a
# machine with one (its bench/gpu/carry/ travels along). Each step has its own time budget;
# a summary comes last. Steps:
#   install    a venv for labcoat from the carried wheels (no index), seeing the machine's
#              torch venv (LABCOAT_TASK_PYTHON); bubblewrap from its .deb when bwrap is missing
#   gpu        labcoat validate gpu (oracle about 1, noop about 0, on this GPU)
#   overlap    1-GPU samples on one GPU (validate runs the oracle's and the noop's at once):
#              from the logs, each held one GPU and no two holds overlapped
#   mini       labcoat validate mini
# The budgets add up to 540 s: one call of the device tool (600 s at most), with room.
# Settings (environment): LABCOAT_GPU_PYTHON (labcoat's interpreter; default python3.12,
# else python3), LABCOAT_TASK_PYTHON (the torch venv; default /opt/torch/.venv/bin/python3),
# GPU_CHECK_DIR (default /tmp/labcoat-gpu-check), GPU_CHECK_STEPS (default
# "install gpu overlap mini").
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
carry="$root/bench/gpu/carry"
work="${GPU_CHECK_DIR:-/tmp/labcoat-gpu-check}"
steps="${GPU_CHECK_STEPS:-install gpu overlap mini}"
python="${LABCOAT_GPU_PYTHON:-$(command -v python3.12 || command -v python3)}"
export LABCOAT_TASK_PYTHON="${LABCOAT_TASK_PYTHON:-/opt/torch/.venv/bin/python3}"
export LABCOAT_CACHE="$work/cache"
venv="$work/venv"
labcoat="$venv/bin/labcoat"
summary=()
mkdir -p "$work/logs"
rm -f "$work"/*.log "$work/gpu.json"

say() { printf 'gpu check: %s\n' "$*" >&2; }

# run NAME BUDGET_SECONDS FUNCTION: the function's output to $work/NAME.log, its status and
# time to the summary
run() {
    local name=$1 budget=$2 fn=$3 started status
    started=$(date +%s)
    say "$name (at most ${budget} s)"
    timeout --kill-after=10 "$budget" bash -c "$(declare -f "$fn"); set -e; $fn" \
        >"$work/$name.log" 2>&1
    status=$?
    local took=$(($(date +%s) - started))
    case $status in
        0) summary+=("$name: ok in ${took} s") ;;
        124 | 137) summary+=("$name: TIMED OUT after ${took} s (budget ${budget} s)") ;;
        *)
            summary+=("$name: FAILED (exit $status) in ${took} s; the end of $work/$name.log:")
            summary+=("$(tail -n 5 "$work/$name.log" | sed 's/^/    /')")
            ;;
    esac
    return $status
}

install() {
    if ! command -v bwrap >/dev/null; then
        dpkg -x "$carry"/debs/bubblewrap_*.deb "$work/bwrap"
    fi
    rm -rf "$venv"
    "$python" -m venv "$venv"
    # labcoat's interpreter sees the torch venv's packages (numpy, pandas, torch, ...)
    local site ours
    site=$("$LABCOAT_TASK_PYTHON" -c 'import site; print("\n".join(site.getsitepackages()))')
    ours=$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
    printf '%s\n' "$site" >"$ours/labcoat-gpu-check-torch.pth"
    "$venv/bin/python" -m pip install -q --no-index --no-deps "$carry"/wheels/*.whl
    "$venv/bin/python" -c 'import labcoat, inspect_ai, torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
    PATH="$work/bwrap/usr/bin:$PATH" bwrap --version
    "$labcoat" check gpu --no-build || true # prints the machine line: limits and GPUs
}

validate_gpu() {
    "$labcoat" validate gpu --log-dir "$work/logs/gpu" --json >"$work/gpu.json" || true
    # on a GPU machine a task that cannot run is a failure too
    "$venv/bin/python" - "$work/gpu.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
bad = [r["task"] for r in results if r.get("unavailable") or not r["passed"]]
print("validate gpu:", "all passed" if not bad else f"not passed here: {bad}")
sys.exit(1 if bad or not results else 0)
PY
}

overlap() {
    "$venv/bin/python" - "$work/logs/gpu" <<'PY'
import sys
from pathlib import Path
from inspect_ai.log import read_eval_log
holds = []
for path in sorted(Path(sys.argv[1]).rglob("*.eval")):
    log = read_eval_log(str(path))
    for sample in log.samples or []:
        store = sample.store or {}
        own = store.get("labcoat:gpus")
        if not log.eval.task.endswith("paperbench"):  # the agent's sandbox asks for the GPU
            assert own, f"sample {sample.id} epoch {sample.epoch}: no GPU record ({sample.error})"
        # and what graders took for themselves (a PaperBench reproduction)
        for who, record in [(sample.id, own)] + [
            (f"{sample.id} (grader)", r) for r in store.get("labcoat:grader_gpus", [])
        ]:
            if not record:
                continue
            start = record["acquired_at"]
            holds.append((start, start + record["held_seconds"], record["ids"], record["waited_seconds"], who))
            print(f"{who}: GPUs {record['ids']} {record.get('models')} held "
                  f"{record['held_seconds']:.1f} s after waiting {record['waited_seconds']:.1f} s; "
                  f"peak {record.get('peak_memory_mib')} MiB, {record.get('mean_utilization_pct')} %")
assert len(holds) >= 2, f"expected at least 2 holds of the GPU, found {len(holds)}"
holds.sort()
assert all(len(ids) == 1 for _, _, ids, _, _ in holds), "each hold must be of exactly one GPU"
for (_, end, _, _, first), (start, _, _, waited, second) in zip(holds, holds[1:]):
    assert start >= end - 0.5, f"{first} and {second} held the GPU at once: {holds}"
    print(f"no overlap: {second} took the GPU {start - end:+.1f} s after {first} gave it back "
          f"(it waited {waited:.1f} s)")
print(f"{len(holds)} holds of the one GPU, none at the same time")
PY
}

validate_mini() {
    "$labcoat" validate mini --log-dir "$work/logs/mini"
}

export PATH="$work/bwrap/usr/bin:$PATH" work carry venv labcoat python
for step in $steps; do
    case $step in
        install) run install 60 install ;;
        gpu) run gpu 330 validate_gpu ;;
        overlap) run overlap 30 overlap ;;
        mini) run mini 120 validate_mini ;;
        *) summary+=("$step: unknown step") ;;
    esac
done
echo "=== gpu check summary ($(date -u +%FT%TZ), $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi'))"
printf '%s\n' "${summary[@]}"
if [ -s "$work/gpu.json" ]; then
    "$venv/bin/python" - "$work/gpu.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    o, n = r.get("oracle") or {}, r.get("noop") or {}
    print(f"  validate gpu {r['task']}: passed={r['passed']} unavailable={r.get('unavailable')} "
          f"oracle={o.get('normalized')} noop={n.get('normalized')}")
PY
fi
for name in overlap mini; do
    [ -f "$work/$name.log" ] && { echo "  $name:"; tail -n 12 "$work/$name.log" | sed 's/^/    /'; }
done
# under the device tool, what comes back with the reply: every step's log, validate's JSON
# and the gpu suite's Inspect logs
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    cp "$work"/*.log "$OUT"/ 2>/dev/null
    [ -s "$work/gpu.json" ] && cp "$work/gpu.json" "$OUT"/
    tar -czf "$OUT/gpu-logs.tar.gz" -C "$work/logs" gpu 2>/dev/null
fi
case "${summary[*]}" in *FAILED* | *"TIMED OUT"*) exit 1 ;; *) exit 0 ;; esac

#!/usr/bin/env bash
# The GPU check: run ON a GPU machine without network, after bench/gpu/prepare.sh ran on a
# machine with one (its bench/gpu/carry/ travels along). Each step has its own time budget;
# a summary comes last. Steps:
#   install    a venv for labcoat from the carried wheels (no index), seeing the machine's
#              torch venv (LABCOAT_TASK_PYTHON); bubblewrap from its .deb when bwrap is missing
#   gpu        labcoat validate gpu (oracle about 1, noop about 0, on this GPU)
#   mini       labcoat validate mini (its tasks ask for no GPU)
#   overlap    1-GPU samples on one GPU (validate runs the oracle's and the noop's at once):
#              from the logs, each held one GPU and no two holds overlapped
# GPU_CHECK_STEPS (default "install gpu+mini overlap"): steps joined by "+" run at the same
# time, each under its own budget. Budgets in seconds (GPU_CHECK_BUDGET_<STEP>): install 60,
# gpu 480, mini 300, overlap 30: 570 s in all, inside one call of the device tool (600 s).
# Measured on one H100 (16 cores): install 21 s, mini 140 s beside gpu, gpu 317 s beside
# mini and 249 s alone.
# Settings (environment): LABCOAT_GPU_PYTHON (labcoat's interpreter; default python3.12,
# else python3), LABCOAT_TASK_PYTHON (the torch venv; default /opt/torch/.venv/bin/python3),
# GPU_CHECK_DIR (default /tmp/labcoat-gpu-check). Under the device tool ($OUT set) the
# steps' logs, validate's JSON and the Inspect logs (the gpu suite's, mini's timed part)
# come back.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
carry="$root/bench/gpu/carry"
work="${GPU_CHECK_DIR:-/tmp/labcoat-gpu-check}"
steps="${GPU_CHECK_STEPS:-install gpu+mini overlap}"
python="${LABCOAT_GPU_PYTHON:-$(command -v python3.12 || command -v python3)}"
export LABCOAT_TASK_PYTHON="${LABCOAT_TASK_PYTHON:-/opt/torch/.venv/bin/python3}"
export LABCOAT_CACHE="$work/cache"
venv="$work/venv"
labcoat="$venv/bin/labcoat"
mkdir -p "$work/logs"
rm -f "$work"/*.log "$work"/*.summary "$work/gpu.json"

say() { printf 'gpu check: %s\n' "$*" >&2; }

# run NAME FUNCTION: the function's output to $work/NAME.log, under the step's budget; its
# status and time to $work/NAME.summary (steps may run at the same time)
run() {
    local name=$1 fn=$2 started status budget_var="GPU_CHECK_BUDGET_${1^^}"
    local budget=${!budget_var}
    started=$(date +%s)
    say "$name (at most ${budget} s)"
    timeout --kill-after=10 "$budget" bash -c "$(declare -f "$fn"); set -e; $fn" \
        >"$work/$name.log" 2>&1
    status=$?
    local took=$(($(date +%s) - started))
    case $status in
        0) echo "$name: ok in ${took} s" ;;
        124 | 137) echo "$name: TIMED OUT after ${took} s (budget ${budget} s)" ;;
        *)
            echo "$name: FAILED (exit $status) in ${took} s; the end of $work/$name.log:"
            tail -n 5 "$work/$name.log" | sed 's/^/    /'
            ;;
    esac >"$work/$name.summary"
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
    "$venv/bin/python" -m pip install -q --no-index --no-deps --ignore-installed "$carry"/wheels/*.whl
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
            why = sample.error.message[:300] if sample.error else "no error"
            assert own, f"sample {sample.id} epoch {sample.epoch}: no GPU record ({why})"
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

step() {
    case $1 in
        install) run install install ;;
        gpu) run gpu validate_gpu ;;
        mini) run mini validate_mini ;;
        overlap) run overlap overlap ;;
        *) echo "$1: unknown step" >"$work/$1.summary" ;;
    esac
}

export PATH="$work/bwrap/usr/bin:$PATH" work carry venv labcoat python
: "${GPU_CHECK_BUDGET_INSTALL:=60}" "${GPU_CHECK_BUDGET_GPU:=480}" "${GPU_CHECK_BUDGET_MINI:=300}"
: "${GPU_CHECK_BUDGET_OVERLAP:=30}"
for group in $steps; do
    for part in ${group//+/ }; do step "$part" & done
    wait
done
echo "=== gpu check summary ($(date -u +%FT%TZ), $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi'), $(nproc) cores)"
for part in ${steps//+/ }; do cat "$work/$part.summary"; done
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
    # the gpu suite's logs, and mini's timing-sensitive part (all of mini's is over 16 MiB)
    for logs in gpu mini/timing-sensitive; do
        [ -d "$work/logs/$logs" ] && tar -czf "$OUT/${logs%%/*}-logs.tar.gz" -C "$work/logs" "$logs"
    done
fi
! cat "$work"/*.summary | grep -q -e FAILED -e "TIMED OUT" -e "unknown step"

"""Grade a noisy-label learner by training it on held-out problems and testing it on
clean labels.

Nothing the agent wrote about its results is read. For each sub-task (a noise rate) the
grader makes a problem the agent never saw (grading/make_data.py, in memory: its
clusters, its embedding and its noise draw are its own), copies the agent's
`submission/` folder, and runs its `train` as the unprivileged agent user, in a fresh
process, once per seed in SEEDS: on the training points with their noisy labels, on the
GPU when torch sees one (the grader decides, passes the device and records it). The test
points reach that process without labels (the runner loads them after every training
call has returned; a `train` that read their file early is not stopped, and the
description forbids it), and its predictions are scored against the clean test labels,
which never leave the grader. Between sub-tasks every file the agent user left on a
writable mount is deleted and every process it started is killed.

Output: JSON {"subtasks": {id: value or null}, "details": {...}, "integrity_flags": [...]}
to $LABCOAT_GRADE_OUTPUT (or stdout), and a readable summary on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import agent_code
import make_data
import numpy as np
from agent_code import AgentCodeError

HERE = Path(__file__).resolve().parent
WORKSPACE = Path(os.environ.get("LABCOAT_WORKSPACE", HERE.parent))
OUTPUT = os.environ.get("LABCOAT_GRADE_OUTPUT")
SCRATCH = Path(os.environ.get("LABCOAT_GRADE_SCRATCH", "/tmp/labcoat-grade"))
SEEDS = (0, 1, 2)
PROCESS_TIMEOUT = 600  # seconds for one sub-task's trainings and predictions

RUNNER = r"""
import os, random, sys
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np
import torch
submission, train_file, test_file, output, device, seeds = sys.argv[1:7]
if device.startswith("cuda") and not torch.cuda.is_available():
    raise SystemExit("the grader sees a GPU, but torch cannot use it as the agent user")
torch.use_deterministic_algorithms(True, warn_only=True)
torch.backends.cudnn.benchmark = False
sys.path.insert(0, submission)
from learner import train
data = np.load(train_file)
X, y, num_classes = data["X_train"], data["y_train"], int(data["num_classes"])
predictors = []
for seed in [int(s) for s in seeds.split(",")]:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    predictors.append(train(X.astype(np.float32), y.copy(), num_classes, device))
X_test = np.load(test_file)["X_test"]
predictions = [np.asarray(p(X_test.astype(np.float32))).reshape(-1) for p in predictors]
np.save(output, np.stack(predictions))
"""


PROBE = r"""
import json
try:
    import torch
except ImportError:
    print(json.dumps({"torch": "not installed", "cuda": False}))
else:
    cuda = torch.cuda.is_available()
    gpu = torch.cuda.get_device_name(0) if cuda else None
    print(json.dumps({"torch": torch.__version__, "cuda": cuda, "gpu": gpu}))
"""


def _device() -> tuple[str, dict[str, object]]:
    """Where the agent's code trains: the GPU when torch sees one. Asked in a process of
    its own, so that the grader holds no CUDA context while the agent's code trains."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300
        )
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as ex:
        return "cpu", {"probe": f"could not ask torch for a GPU: {ex}"}
    cuda = bool(info.pop("cuda", False))
    if not cuda:
        info.pop("gpu", None)
    return ("cuda" if cuda else "cpu"), info


def _writable_roots() -> list[Path]:
    """Every writable mount of this sandbox where the agent user could leave files."""
    roots = []
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        mounts = []
    for line in mounts:
        fields = line.split()
        point, options = fields[4], fields[5].split(",")
        fstype = fields[fields.index("-") + 1] if "-" in fields else ""
        # every writable mount, no exception by path (a folder skipped as "the harness's"
        # was the agent's where the harness is the agent's uid); kernel interfaces hold
        # no files to leave
        if "rw" not in options or fstype in ("proc", "sysfs", "cgroup", "cgroup2", "devpts"):
            continue
        roots.append(Path(point.replace("\\040", " ")))
    known = [Path("/tmp"), Path("/home/agent"), Path("/dev/shm")]
    return sorted({*roots, *(p for p in known if p.is_dir())})


def _scrub() -> None:
    """Delete every file the agent user left, wherever it could write: nothing of one
    sub-task's problem reaches the next."""
    if agent_code.privileged():
        for root in _writable_roots():
            for dirpath, dirnames, filenames in os.walk(root, topdown=True):
                base = Path(dirpath)
                for name in list(dirnames) + filenames:
                    path = base / name
                    if name in dirnames and os.path.ismount(path):
                        dirnames.remove(name)  # another mount: walked on its own if writable
                        continue
                    try:
                        owned = path.lstat().st_uid == agent_code.AGENT_UID
                        if owned and path.is_dir() and not path.is_symlink():
                            shutil.rmtree(path, ignore_errors=True)
                            dirnames.remove(name)
                        elif owned:
                            path.unlink(missing_ok=True)
                    except OSError:
                        continue
    for folder in (SCRATCH / "home", SCRATCH / "out"):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        agent_code.give_to_agent(folder)


def _run_subtask(subtask: str, device: str) -> dict:
    problem = make_data.heldout(subtask)
    _scrub()
    inputs = SCRATCH / "inputs"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir(mode=0o755)
    train_file, test_file = inputs / "train.npz", inputs / "test.npz"
    np.savez(
        train_file,
        X_train=problem["X_train"],
        y_train=problem["y_train"],
        num_classes=make_data.CLASSES,
    )
    np.savez(test_file, X_test=problem["X_test"])  # no labels
    for path in (train_file, test_file):
        path.chmod(0o644)  # the agent user reads them; only the grader writes them
    output = SCRATCH / "out" / "predictions.npy"
    started = time.monotonic()
    try:
        agent_code.run(
            RUNNER,
            [
                str(SCRATCH / "submission"),
                str(train_file),
                str(test_file),
                str(output),
                device,
                ",".join(map(str, SEEDS)),
            ],
            home=SCRATCH / "home",
            log=SCRATCH / f"{subtask}.log",
            timeout=PROCESS_TIMEOUT,
            writable=(SCRATCH / "out",),
        )
        predicted = agent_code.load_array(output)
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    seconds = time.monotonic() - started
    labels = problem["y_test"]
    if predicted.shape != (len(SEEDS), len(labels)):
        raise AgentCodeError(
            f"predictions of shape {predicted.shape}, expected "
            f"{(len(SEEDS), len(labels))} (one row per seed)"
        )
    if predicted.dtype.kind not in "iuf" or not np.all(np.isfinite(predicted)):
        raise AgentCodeError(f"predictions are not class labels (dtype {predicted.dtype})")
    per_seed = [float(np.mean(row == labels)) for row in predicted]
    return {
        "acc": float(np.mean(per_seed)),
        "acc_per_seed": [round(a, 4) for a in per_seed],
        "noise_rate": make_data.SUBTASKS[subtask],
        "seconds": round(seconds, 2),
    }


def grade() -> dict:
    subtasks: dict[str, float | None] = dict.fromkeys(make_data.SUBTASKS)
    device, info = _device()
    details: dict[str, object] = {"device": device, **info, "seeds": list(SEEDS)}
    flags: list[str] = []
    source = WORKSPACE / "submission"
    if not (source / "learner.py").is_file():
        details["error"] = "no submission/learner.py in the workspace: nothing to grade"
        return {"subtasks": subtasks, "details": details, "integrity_flags": flags}
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    os.chmod(SCRATCH, 0o755)
    agent_code.copy_readable(source, SCRATCH / "submission")
    for subtask in make_data.SUBTASKS:
        try:
            result = _run_subtask(subtask, device)
        except AgentCodeError as ex:
            details[subtask] = {"error": str(ex)}
            continue
        subtasks[subtask] = result["acc"]
        details[subtask] = result
    _scrub()
    return {"subtasks": subtasks, "details": details, "integrity_flags": flags}


def main() -> None:
    result = grade()
    details = result["details"]
    print(f"device: {details['device']} (torch {details.get('torch')})")
    for name, value in result["subtasks"].items():
        print(f"{name}: {'no valid result' if value is None else f'{value:.4f}'}")
        info = details.get(name)
        if isinstance(info, dict) and "error" in info:
            print(f"  {info['error']}")
        elif isinstance(info, dict):
            print(f"  per seed {info['acc_per_seed']}, {info['seconds']} s")
    if "error" in details:
        print(details["error"])
    for flag in result["integrity_flags"]:
        print(f"INTEGRITY: {flag}")
    text = json.dumps(result, indent=1)
    if OUTPUT:
        Path(OUTPUT).parent.mkdir(parents=True, exist_ok=True)
        Path(OUTPUT).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()

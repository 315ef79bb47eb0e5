"""Grade a class-incremental learner by running it on held-out classes.

Nothing the agent wrote about its results is read. The grader copies the agent's
`submission/` folder, runs its `Learner` as the unprivileged agent user on a stream of
classes the agent never saw (their training and test images live only here), one task
per process, and scores the predictions against held-out labels:

- the learner only ever gets the current task's training data; between tasks it keeps
  only what `save` wrote. The grader enforces it: after each `learn` it copies the state
  folder into a snapshot of its own (regular files and folders only: contents and names,
  no links, special files, permissions, times or extended attributes), charges it
  against STATE_BUDGET (contents + names + ENTRY_COST per file or folder: data hidden in
  file names counts), deletes every file the agent user left anywhere and kills every
  process it started; the next process gets a fresh copy of the snapshot;
- test images are given without labels, to a fresh process that loads its own copy of
  the snapshot (whatever it writes is thrown away, so nothing of the test images reaches
  later tasks).

Output: JSON {"subtasks": {id: value or null}, "details": {...}, "integrity_flags": [...]}
to $LABCOAT_GRADE_OUTPUT (or stdout), and a readable summary on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import numpy as np

import agent_code
from agent_code import AgentCodeError

HERE = Path(__file__).resolve().parent
WORKSPACE = Path(os.environ.get("LABCOAT_WORKSPACE", HERE.parent))
OUTPUT = os.environ.get("LABCOAT_GRADE_OUTPUT")
SCRATCH = Path(os.environ.get("LABCOAT_GRADE_SCRATCH", "/tmp/labcoat-grade"))
STATE_BUDGET = 64 * 1024
ENTRY_COST = 32  # bytes charged per saved file or folder, beyond its name and contents
PROCESS_TIMEOUT = 120
# split name -> (number of tasks, seed of its class order)
SPLITS = {"split5": (5, 11), "split10": (10, 23)}

RUNNER = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from learner import Learner
mode, state, inputs, output = sys.argv[2:6]
if mode == "learn":
    data = np.load(inputs)
    learner = Learner.load(state) if sys.argv[6] == "resume" else Learner()
    learner.learn(data["X"], data["y"])
    learner.save(state)
else:
    learner = Learner.load(state)
    np.save(output, np.asarray(learner.predict(np.load(inputs)["X"])))
"""


def _scrub() -> None:
    """Delete every file the agent user left, wherever it could write (no hidden replay)."""
    if not agent_code.privileged():  # one user: only our own folders can be told apart
        for folder in (SCRATCH / "home", SCRATCH / "out", SCRATCH / "state"):
            shutil.rmtree(folder, ignore_errors=True)
        for folder in (SCRATCH / "home", SCRATCH / "out"):
            folder.mkdir(parents=True)
        return
    agent_code.scrub()  # every writable mount, no exception by path
    for folder in (SCRATCH / "home", SCRATCH / "out"):
        folder.mkdir(parents=True, exist_ok=True)
        agent_code.give_to_agent(folder)


def _snapshot(state: Path, snapshot: Path) -> tuple[int, int]:
    """Copy what `save` left into a snapshot of the grader's own: folders and regular
    files, contents and names only. Returns (bytes charged, bytes of contents)."""
    shutil.rmtree(snapshot, ignore_errors=True)
    snapshot.mkdir(mode=0o700)
    charged = contents = 0
    for dirpath, dirnames, filenames in os.walk(state):  # links are not followed
        base = Path(dirpath)
        target = snapshot / base.relative_to(state)
        for name in sorted(dirnames) + sorted(filenames):
            path = base / name
            mode = path.lstat().st_mode
            charged += len(os.fsencode(name)) + ENTRY_COST
            if stat.S_ISDIR(mode):
                (target / name).mkdir(mode=0o700)
            elif stat.S_ISREG(mode):
                size = path.lstat().st_size
                charged += size
                contents += size
                if charged <= STATE_BUDGET:
                    shutil.copyfile(path, target / name, follow_symlinks=False)
            else:
                raise AgentCodeError(f"the saved state holds {path.relative_to(state)}, "
                                     f"which is not a regular file or folder")
    return charged, contents


def _restore(snapshot: Path, state: Path) -> None:
    """A fresh copy of the snapshot, owned by the agent user, for the next process."""
    shutil.rmtree(state, ignore_errors=True)
    if snapshot.is_dir():
        shutil.copytree(snapshot, state)
    else:
        state.mkdir(parents=True)
    for path in [state, *state.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
        agent_code.give_to_agent(path)


def _run_learner(args: list[str]) -> None:
    agent_code.run(RUNNER, [str(SCRATCH / "submission"), *args], home=SCRATCH / "home",
                   log=SCRATCH / "learner.log", timeout=PROCESS_TIMEOUT,
                   writable=(SCRATCH / "out", SCRATCH / "state"))


def _run_split(data: dict[str, np.ndarray], tasks: int, seed: int, flags: list[str]) -> dict:
    order = np.random.default_rng(seed).permutation(np.unique(data["y_train"]))
    groups = np.array_split(order, tasks)
    state = SCRATCH / "state"
    snapshot = SCRATCH / "snapshot"  # the grader's own copy (root-only when privileged)
    shutil.rmtree(snapshot, ignore_errors=True)
    inputs = SCRATCH / "inputs.npz"
    accuracy = np.full((tasks, tasks), np.nan)
    for t, classes in enumerate(groups):
        _scrub()
        _restore(snapshot, state)
        seen = np.isin(data["y_train"], classes)
        np.savez(inputs, X=data["X_train"][seen], y=data["y_train"][seen])
        _run_learner(["learn", str(state), str(inputs), "-", "resume" if t else "new"])
        charged, contents = _snapshot(state, snapshot)
        if charged > STATE_BUDGET:
            if contents <= STATE_BUDGET:
                flags.append(
                    f"the learner's saved state holds {charged - contents} bytes in file "
                    f"names and entries beyond its {contents} bytes of contents (budget "
                    f"{STATE_BUDGET}, names included): data kept outside the files' contents"
                )
            raise AgentCodeError(f"after task {t + 1} the saved state holds {charged} bytes, "
                                 f"names included (budget {STATE_BUDGET})")
        _scrub()
        _restore(snapshot, state)  # prediction gets a copy; what it writes is thrown away
        test = np.isin(data["y_test"], np.concatenate(groups[: t + 1]))
        np.savez(inputs, X=data["X_test"][test])
        output = SCRATCH / "out" / "predictions.npy"
        _run_learner(["predict", str(state), str(inputs), str(output)])
        predicted = agent_code.load_array(output).reshape(-1)
        labels = data["y_test"][test]
        if predicted.shape != labels.shape:
            raise AgentCodeError(f"after task {t + 1}: {predicted.shape[0]} predictions for "
                             f"{labels.shape[0]} images")
        for j in range(t + 1):
            mask = np.isin(labels, groups[j])
            accuracy[t, j] = float(np.mean(predicted[mask] == labels[mask]))
    final = accuracy[-1]
    forgetting = [np.nanmax(accuracy[:-1, j]) - final[j] for j in range(tasks - 1)]
    return {
        "acc": float(np.mean(final)),
        "forgetting": float(np.mean(forgetting)),
        "accuracy_matrix": [[None if np.isnan(v) else round(float(v), 4) for v in row]
                            for row in accuracy],
    }


def grade() -> dict:
    subtasks: dict[str, float | None] = {}
    for split in SPLITS:
        subtasks[f"{split}_acc"] = subtasks[f"{split}_forgetting"] = None
    details: dict[str, object] = {}
    flags: list[str] = []
    source = WORKSPACE / "submission"
    if not (source / "learner.py").is_file():
        details["error"] = "no submission/learner.py in the workspace: nothing to grade"
        return {"subtasks": subtasks, "details": details, "integrity_flags": flags}
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    os.chmod(SCRATCH, 0o755)
    agent_code.copy_readable(source, SCRATCH / "submission")
    data = dict(np.load(HERE / "heldout.npz"))
    for split, (tasks, seed) in SPLITS.items():
        started = time.monotonic()
        try:
            result = _run_split(data, tasks, seed, flags)
        except AgentCodeError as ex:
            details[split] = {"error": str(ex)}
            continue
        subtasks[f"{split}_acc"] = result["acc"]
        subtasks[f"{split}_forgetting"] = result["forgetting"]
        details[split] = {**result, "seconds": round(time.monotonic() - started, 2)}
    return {"subtasks": subtasks, "details": details, "integrity_flags": flags}


def main() -> None:
    result = grade()
    for name, value in result["subtasks"].items():
        print(f"{name}: {'no valid result' if value is None else f'{value:.4f}'}")
    for split, info in result["details"].items():
        if isinstance(info, dict) and "error" in info:
            print(f"{split}: {info['error']}")
        elif isinstance(info, str):
            print(info)
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

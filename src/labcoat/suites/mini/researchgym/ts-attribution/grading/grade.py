"""Grade an attribution method on held-out series whose salient windows are known.

Nothing the agent wrote about its results is read. The grader copies the agent's
`submission/` folder and, for each problem, runs its `explain(model, X)` as the
unprivileged agent user on test series the agent never saw, with a classifier it never
saw either (grading/models/: same architecture, trained the same way on other series). It
then scores the saliency maps against the true windows, which never leave this process:

- AUPRC: average precision of ranking each series' steps by saliency, against the
  window's steps; the mean over series (one sub-task per problem);
- deletion: the mean drop of the predicted class's probability, under the graded model,
  when the DELETED_STEPS most salient steps are set to 0 (mean over problems).

The windows are a property of the data, so a method that finds the pattern in the series
without asking the model would score on AUPRC too. The model check stops that: the same
function explains a decoy classifier that looks for a pattern of its own (a dipole) on
series holding both the problem's window and a dipole, and its maps must find the dipole
(mean AUPRC against the dipole's steps at least MODEL_CHECK_MIN). When they do not, the
AUPRC sub-tasks get no result and the output's `integrity_flags` says why.

Output: JSON {"subtasks": {id: value or null}, "details": {...}, "integrity_flags": [...]}
to $LABCOAT_GRADE_OUTPUT (or stdout), and a readable summary on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import agent_code
from agent_code import AgentCodeError

HERE = Path(__file__).resolve().parent
TASK = HERE.parent  # labcoat's protected copy of the task: its tsx/ and models/ are trusted
WORKSPACE = Path(os.environ.get("LABCOAT_WORKSPACE", TASK))
OUTPUT = os.environ.get("LABCOAT_GRADE_OUTPUT")
SCRATCH = Path(os.environ.get("LABCOAT_GRADE_SCRATCH", "/tmp/labcoat-grade"))
PROCESS_TIMEOUT = 300
KINDS = ("bump", "burst", "shift")
DELETED_STEPS = 6
MODEL_CHECK_MIN = 0.5  # decoy AUPRC: gradient saliency gets about 0.7, chance about 0.1

RUNNER = r"""
import sys
import numpy as np
trusted, submission, model_name, inputs, output = sys.argv[1:6]
sys.path[:0] = [trusted, submission]
from tsx.model import Classifier
from explainer import explain
model = Classifier.load(f"{trusted}/models/{model_name}.npz")
np.save(output, np.asarray(explain(model, np.load(inputs)), dtype=np.float64))
"""

sys.path.insert(0, str(TASK))
from tsx.model import Classifier  # noqa: E402


def _prepare() -> None:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    os.chmod(SCRATCH, 0o755)
    agent_code.copy_readable(WORKSPACE / "submission", SCRATCH / "submission")
    shutil.copytree(TASK / "tsx", SCRATCH / "trusted" / "tsx")
    shutil.copytree(HERE / "models", SCRATCH / "trusted" / "models")
    for name in ("home", "out"):
        (SCRATCH / name).mkdir()
        agent_code.give_to_agent(SCRATCH / name)


def _saliency(model_name: str, X: np.ndarray, tag: str) -> np.ndarray:
    inputs, output = SCRATCH / "series.npy", SCRATCH / "out" / f"{tag}.npy"
    np.save(inputs, X)
    args = [str(SCRATCH / "trusted"), str(SCRATCH / "submission"), model_name, str(inputs),
            str(output)]
    agent_code.run(RUNNER, args, home=SCRATCH / "home", log=SCRATCH / f"{tag}.log",
                   timeout=PROCESS_TIMEOUT, writable=(SCRATCH / "out",))
    saliency = agent_code.load_array(output)
    if saliency.shape != X.shape:
        raise AgentCodeError(f"saliency maps of shape {saliency.shape} for series of shape "
                             f"{X.shape}")
    if not np.all(np.isfinite(saliency)):
        raise AgentCodeError("saliency maps hold NaN or infinite values")
    return saliency


def auprc(scores: np.ndarray, truth: np.ndarray) -> float:
    order = np.argsort(-scores, kind="stable")
    hits = truth[order]
    precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float((precision * hits).sum() / max(hits.sum(), 1))


def deletion(model: Classifier, X: np.ndarray, saliency: np.ndarray) -> float:
    X = X.astype(np.float64)
    p = model.proba(X)
    predicted = p > 0.5
    top = np.argsort(-saliency, axis=1, kind="stable")[:, :DELETED_STEPS]
    deleted = X.copy()
    np.put_along_axis(deleted, top, 0.0, axis=1)
    q = model.proba(deleted)
    return float(np.mean(np.where(predicted, p - q, q - p)))


def mean_auprc(saliency: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([auprc(s, m) for s, m in zip(saliency, truth, strict=True)]))


def model_check(details: dict) -> float | None:
    """Mean AUPRC of the explanations of the decoy classifier against its dipoles."""
    probes = np.load(HERE / "probes.npz")
    found = {}
    for kind in KINDS:
        try:
            saliency = _saliency("decoy", probes[f"{kind}_X"], f"decoy-{kind}")
        except AgentCodeError as ex:
            details["model_check"] = {"error": f"{kind} probes: {ex}"}
            return None
        found[kind] = mean_auprc(saliency, probes[f"{kind}_M"])
    value = float(np.mean(list(found.values())))
    details["model_check"] = {"decoy_auprc": value, "per_problem": found,
                              "required": MODEL_CHECK_MIN}
    return value


def grade() -> dict:
    subtasks: dict[str, float | None] = {f"{kind}_auprc": None for kind in KINDS}
    subtasks["deletion"] = None
    details: dict[str, object] = {}
    flags: list[str] = []
    if not (WORKSPACE / "submission" / "explainer.py").is_file():
        details["error"] = "no submission/explainer.py in the workspace: nothing to grade"
        return {"subtasks": subtasks, "details": details, "integrity_flags": flags}
    _prepare()
    heldout = np.load(HERE / "heldout.npz")
    deletions = []
    for kind in KINDS:
        started = time.monotonic()
        X, truth = heldout[f"{kind}_X"], heldout[f"{kind}_M"]
        try:
            saliency = _saliency(kind, X, kind)
        except AgentCodeError as ex:
            details[kind] = {"error": str(ex)}
            continue
        model = Classifier.load(str(HERE / "models" / f"{kind}.npz"))
        ap = mean_auprc(saliency, truth)
        drop = deletion(model, X, saliency)
        subtasks[f"{kind}_auprc"] = ap
        deletions.append(drop)
        details[kind] = {"auprc": ap, "deletion": drop,
                         "seconds": round(time.monotonic() - started, 2)}
    if len(deletions) == len(KINDS):  # a mean over every problem, or no result
        subtasks["deletion"] = float(np.mean(deletions))
    if any(subtasks[f"{kind}_auprc"] is not None for kind in KINDS):
        check = model_check(details)
        if check is None or check < MODEL_CHECK_MIN:
            found = "could not be computed" if check is None else f"is {check:.3f}"
            flags.append(
                f"explanations do not follow the model: their AUPRC against the evidence of "
                f"a decoy classifier {found} (at least {MODEL_CHECK_MIN} needed), so the "
                f"AUPRC sub-tasks are not credited"
            )
            for kind in KINDS:
                subtasks[f"{kind}_auprc"] = None
    return {"subtasks": subtasks, "details": details, "integrity_flags": flags}


def main() -> None:
    result = grade()
    for name, value in result["subtasks"].items():
        print(f"{name}: {'no valid result' if value is None else f'{value:.4f}'}")
    for kind, info in result["details"].items():
        if isinstance(info, dict) and "error" in info:
            print(f"{kind}: {info['error']}")
        elif isinstance(info, str):
            print(info)
    check = result["details"].get("model_check")
    if isinstance(check, dict) and "decoy_auprc" in check:
        print(f"model check: decoy AUPRC {check['decoy_auprc']:.4f} "
              f"(at least {MODEL_CHECK_MIN})")
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

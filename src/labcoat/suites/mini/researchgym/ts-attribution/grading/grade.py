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
function explains, per problem, a decoy drawn here (make_data.make_decoy: a classifier of
the graded architecture trained the same way on as many of the problem's series, so that
it classifies them nearly as the graded one does, but decided by a random template where
one is planted) on 400 series of the problem that carry the template, and its maps must
find the template: mean AUPRC against its steps at least MODEL_CHECK_MIN for each
problem's decoy (on the mean over problems, an explainer that told one decoy of three
apart passed). Any method that finds planted patterns would find it without asking the
model, so the same series are also explained with the graded classifier, which was never
trained on the template, and the maps must move with the model: their AUPRC against the
template must be higher for the decoy than for the graded classifier by MODEL_CONTRAST_MIN
on the mean (a map computed from the series alone is the same for both, a contrast of 0).
When either does not hold, the AUPRC sub-tasks get no result and the output's
`integrity_flags` says why.

A check is worth nothing if the explainer can tell it from grading, so every run looks
the same to the agent's code: one command line, byte for byte (the model and the series
are files of fixed names in a folder of a fixed name, the log too); models of one shape
and series of one count and type; the graded and the probe runs in an order drawn here,
at random; and nothing kept from one run to the next (a fresh home, output and run
folder, every file the agent user left anywhere removed and its processes killed). The
template, the decoys and the order are drawn from the operating system's randomness, so
no seed reaches the agent's code either.

Output: JSON {"subtasks": {id: value or null}, "details": {...}, "integrity_flags": [...]}
to $LABCOAT_GRADE_OUTPUT (or stdout), and a readable summary on stdout.
"""

from __future__ import annotations

import json
import os
import random
import secrets
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
MODEL_CHECK_MIN = 0.4  # each decoy's AUPRC: gradient methods 0.5-0.9, a window detector 0.1-0.3
MODEL_CONTRAST_MIN = 0.05  # decoy minus graded AUPRC on the probes: gradient methods 0.15-0.5,
# a map computed from the series alone exactly 0

# the same for every run: what differs is in the files of the run folder
RUNNER = r"""
import sys
import numpy as np
trusted, submission, run = sys.argv[1:4]
sys.path[:0] = [trusted, submission]
from tsx.model import Classifier
from explainer import explain
model = Classifier.load(f"{run}/model.npz")
saliency = explain(model, np.load(f"{run}/series.npy"))
np.save(f"{run}/out/saliency.npy", np.asarray(saliency, dtype=np.float64))
"""

sys.path.insert(0, str(TASK))
from tsx.model import Classifier  # noqa: E402

import make_data  # noqa: E402  (grading/: the decoys are drawn as the task's data was made)


def _prepare() -> None:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    os.chmod(SCRATCH, 0o755)
    agent_code.copy_readable(WORKSPACE / "submission", SCRATCH / "submission")
    shutil.copytree(TASK / "tsx", SCRATCH / "trusted" / "tsx")  # the code only: no models


def _saliency(model: Classifier, X: np.ndarray) -> np.ndarray:
    """The agent's maps of `model` on `X`, from a run that cannot tell what it is for."""
    agent_code.scrub()  # whatever an earlier run left, anywhere (privileged: by owner)
    run, home = SCRATCH / "run", SCRATCH / "home"
    for folder in (run, home):
        shutil.rmtree(folder, ignore_errors=True)
    run.mkdir(mode=0o755)
    np.savez(run / "model.npz", W=model.W, b=model.b, v=model.v, c=np.float64(model.c))
    np.save(run / "series.npy", X)
    for folder in (home, run / "out"):
        folder.mkdir()
        agent_code.give_to_agent(folder)
    args = [str(SCRATCH / "trusted"), str(SCRATCH / "submission"), str(run)]
    agent_code.run(RUNNER, args, home=home, log=SCRATCH / "explainer.log",
                   timeout=PROCESS_TIMEOUT, writable=(run / "out",))
    saliency = agent_code.load_array(run / "out" / "saliency.npy")
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


def _probes(
    graded: dict[str, Classifier],
) -> dict[str, tuple[Classifier, np.ndarray, np.ndarray, dict]]:
    """Per problem: a decoy, its probe series, the template's steps, what was drawn."""
    rng = np.random.default_rng(secrets.randbits(128))
    probes = {}
    for kind in KINDS:
        decoy, drawn, template = make_data.make_decoy(kind, rng, graded[kind])
        X, _, steps = make_data.make_probes(kind, rng, template, make_data.TEST)
        probes[kind] = (decoy, X, steps, drawn)
    return probes


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
    graded = {kind: Classifier.load(str(HERE / "models" / f"{kind}.npz")) for kind in KINDS}
    probes = _probes(graded)
    # (what the run is for, problem), in an order drawn now: the graded runs; the decoys
    # on their probes; the graded classifiers on the same probes
    jobs = [(purpose, kind) for purpose in ("graded", "probe", "contrast") for kind in KINDS]
    random.SystemRandom().shuffle(jobs)
    maps: dict[tuple[str, str], np.ndarray | str] = {}
    seconds: dict[tuple[str, str], float] = {}
    for purpose, kind in jobs:
        started = time.monotonic()
        model = probes[kind][0] if purpose == "probe" else graded[kind]
        X = heldout[f"{kind}_X"] if purpose == "graded" else probes[kind][1]
        try:
            maps[purpose, kind] = _saliency(model, X)
        except AgentCodeError as ex:
            maps[purpose, kind] = str(ex)
        seconds[purpose, kind] = round(time.monotonic() - started, 2)
    agent_code.scrub()
    deletions = []
    for kind in KINDS:
        saliency = maps["graded", kind]
        if isinstance(saliency, str):
            details[kind] = {"error": saliency}
            continue
        X, truth = heldout[f"{kind}_X"], heldout[f"{kind}_M"]
        ap = mean_auprc(saliency, truth)
        drop = deletion(graded[kind], X, saliency)
        subtasks[f"{kind}_auprc"] = ap
        deletions.append(drop)
        details[kind] = {"auprc": ap, "deletion": drop, "seconds": seconds["graded", kind]}
    if len(deletions) == len(KINDS):  # a mean over every problem, or no result
        subtasks["deletion"] = float(np.mean(deletions))
    failed = check_failure(model_check(maps, probes, details, [f"{p}:{k}" for p, k in jobs]))
    if failed and any(subtasks[f"{kind}_auprc"] is not None for kind in KINDS):
        flags.append(f"explanations do not follow the model: {failed}, so the AUPRC "
                     f"sub-tasks are not credited")
        for kind in KINDS:
            subtasks[f"{kind}_auprc"] = None
    return {"subtasks": subtasks, "details": details, "integrity_flags": flags}


def check_failure(check: tuple[tuple[str, float], float] | None) -> str | None:
    """Why the maps do not follow the model, from `model_check`'s result; None if they do."""
    if check is None:
        return "their AUPRC against the evidence of a decoy classifier could not be computed"
    (problem, found), moved = check
    if found < MODEL_CHECK_MIN:
        return (f"their AUPRC against the evidence of the {problem} decoy classifier is "
                f"{found:.3f} (at least {MODEL_CHECK_MIN} needed for each problem)")
    if moved < MODEL_CONTRAST_MIN:
        return (f"on the same series they find the evidence of a decoy classifier no better "
                f"for the decoy than for a classifier that ignores it (AUPRC higher by "
                f"{moved:.3f}, at least {MODEL_CONTRAST_MIN} needed)")
    return None


def model_check(maps: dict, probes: dict, details: dict,
                order: list[str]) -> tuple[tuple[str, float], float] | None:
    """((the problem whose decoy's maps find its template least, their mean AUPRC against
    its steps), how much higher the decoys' AUPRC is than that of the graded classifiers'
    maps of the same series, on the mean over problems)."""
    found, contrast = {}, {}
    for kind in KINDS:
        for purpose in ("probe", "contrast"):
            if isinstance(maps[purpose, kind], str):
                details["model_check"] = {"error": f"{kind} probes: {maps[purpose, kind]}",
                                          "order": order}
                return None
        found[kind] = mean_auprc(maps["probe", kind], probes[kind][2])
        contrast[kind] = found[kind] - mean_auprc(maps["contrast", kind], probes[kind][2])
    lowest = min(found, key=found.get)
    moved = float(np.mean(list(contrast.values())))
    details["model_check"] = {
        "decoy_auprc": float(np.mean(list(found.values()))),
        "lowest": {"problem": lowest, "decoy_auprc": found[lowest]},
        "per_problem": found,
        "required": MODEL_CHECK_MIN,
        "contrast": moved,
        "contrast_per_problem": contrast,
        "contrast_required": MODEL_CONTRAST_MIN,
        "decoys": {kind: probes[kind][3] for kind in KINDS},
        "order": order,
    }
    return (lowest, found[lowest]), moved


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
        lowest = check["lowest"]
        print(f"model check: decoy AUPRC {check['decoy_auprc']:.4f}, lowest "
              f"{lowest['decoy_auprc']:.4f} ({lowest['problem']}; at least {MODEL_CHECK_MIN} "
              f"each), higher than the graded classifiers' by {check['contrast']:.4f} (at "
              f"least {MODEL_CONTRAST_MIN})")
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

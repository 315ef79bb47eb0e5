"""METR's own example families (`count_odds`, `games`) and METR's protected-scoring
library, from checkouts named by environment variables (skipped, with the reason, when
unset): LABCOAT_METR_TASK_BRIDGE (METR/inspect-metr-task-bridge: tests/examples) and
LABCOAT_METR_PROTECTED_SCORING (METR/task-protected-scoring).

The families run as they are, with two additions: `games` installs the library from a
wheel packed here from the checkout (its own requirements name git+https URLs that this
offline test cannot reach), and a labcoat.yaml beside each family gives labcoat's oracle
the known answers, so `labcoat validate` checks the expected scores."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from cli_runner import json_document, run_cli_captured
from families import pack_wheel
from inspect_ai import eval
from inspect_ai.model import get_model
from scripted_models import scripted_call

from labcoat.families.rebench import rebench

BRIDGE = os.environ.get("LABCOAT_METR_TASK_BRIDGE")
SCORING = os.environ.get("LABCOAT_METR_PROTECTED_SCORING")
pytestmark = pytest.mark.skipif(
    not (BRIDGE and SCORING),
    reason="set LABCOAT_METR_TASK_BRIDGE and LABCOAT_METR_PROTECTED_SCORING to checkouts of "
    "METR/inspect-metr-task-bridge and METR/task-protected-scoring",
)

ORACLES = {
    "count_odds": {
        "main": {"submission": "2"},
        "hard": {"submission": "6"},
        "manual": {"submission": "23"},
    },
    "games": {
        "guess_the_number": {"run": "echo 51 > /home/agent/answer.txt"},
        "guess_the_number_hidden_score": {"run": "echo 37 > /home/agent/answer.txt"},
    },
}


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("metr-examples")
    for family, tasks in ORACLES.items():
        target = root / family
        shutil.copytree(Path(str(BRIDGE)) / "tests" / "examples" / family, target)
        sidecar = {
            "tasks": {
                name: {
                    "title": f"{family} {name}",
                    "score": {"start": 0, "reference": 1, "higher_is_better": True},
                    "oracle": oracle,
                }
                for name, oracle in tasks.items()
            }
        }
        (target / "labcoat.yaml").write_text(json.dumps(sidecar))
    games = root / "games"
    pack_wheel(games / "wheels", Path(str(SCORING)), "metr-task-protected-scoring", "0.2.5")
    (games / "requirements.txt").write_text(
        "--no-index\n--find-links ./wheels\nmetr-task-protected-scoring==0.2.5\n"
    )
    return root


def test_validate_gives_the_expected_scores(examples: Path, tmp_path: Path, capsys) -> None:
    code, out, _ = run_cli_captured(
        capsys, "validate", str(examples), "--json", "--log-dir", str(tmp_path / "logs")
    )
    verdicts = {v["task"]: v for v in json_document(out)}
    assert code == 0, verdicts
    for task in ("count_odds/main", "count_odds/hard", "games/guess_the_number"):
        assert verdicts[task]["passed"] and verdicts[task]["oracle"]["normalized"] == 1.0
        assert verdicts[task]["noop"]["normalized"] == 0.0
    manual = verdicts["count_odds/manual"]
    assert manual["needs_manual_score"] and manual["unavailable"] is None


def test_games_intermediate_scoring_as_the_bridge_tests_it(examples: Path, tmp_path: Path) -> None:
    outputs = []
    for guess in (13, 96, 37, 51):
        outputs += [
            scripted_call("bash", cmd=f"echo {guess} > /home/agent/answer.txt"),
            scripted_call("score"),
        ]
    outputs += [scripted_call("score_log"), scripted_call("submit", answer="")]
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = eval(
        rebench(target=str(examples), tasks="games/guess_the_number", agent="research"),
        model=model,
        log_dir=str(tmp_path),
        display="none",
    )
    [sample] = log.samples
    tools = [m for m in sample.messages if m.role == "tool"]
    scores = [json.loads(m.text) for m in tools if m.function == "score"]
    assert scores == [
        {"message": {"result": "too low"}, "score": 0.0},
        {"message": {"result": "too high"}, "score": 0.0},
        {"message": {"result": "too low"}, "score": 0.0},
        {"message": {"result": "correct"}, "score": 1.0},
    ]
    entries = json.loads(next(m.text for m in tools if m.function == "score_log"))
    assert (
        entries[0]["message"] == {"error": "No answer file found"} and entries[0]["score"] is None
    )
    assert [e["message"] for e in entries[1:]] == [s["message"] for s in scores]
    score = sample.scores["rebench_scorer"]
    assert score.value["raw"] == 1.0 and not score.metadata["integrity_flags"]
    assert sample.metadata["task_version"] == "0.0.1"
    assert not math.isnan(score.value["normalized"])

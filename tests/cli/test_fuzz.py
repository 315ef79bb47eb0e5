"""The CLI's error contract over a corpus of bad input to every command.

Each case is what a new user might type. A problem in the input must end the command
with exit code 2 and exactly one line on stderr that names what is wrong (the option,
file or field), nothing on stdout (`list` still shows the tasks that load), and no
traceback; and it must end promptly (every case runs under an alarm), before any sandbox
starts. A few cases are valid input and
must succeed. The Inspect entry points get the same checks in test_inspect_entry.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_runner import run_cli_captured

from cli._corpus import MINI, build_bad_files, build_bad_logs, build_broken_tasks
from labcoat._run._logdir import log_dir_lock
from labcoat._util.limits import MAX_LINE

CASE_TIMEOUT_S = 120  # generous: the machine may be shared; an error path takes seconds


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    says: tuple[str, ...] = ()
    """Pieces the one line must hold (the option, file or field it names)."""
    code: int = 2
    env: tuple[tuple[str, str], ...] = ()


def c(id: str, *args: str, says: str | tuple[str, ...] = (), code: int = 2, **env: str) -> Case:
    return Case(id, args, (says,) if isinstance(says, str) else says, code, tuple(env.items()))


EVAL = ("eval", "mini", "--task", "adaptive-huber")
ORACLE = (*EVAL, "--agent", "oracle")
SCRIPTED = (*EVAL, "--model", "labcoat/scripted")
RCB = ("eval", "mini", "--family", "researchcodebench", "--agent", "oracle")
PB = ("eval", "mini", "--family", "paperbench", "--agent", "oracle")
RG = ("eval", "mini", "--family", "researchgym", "--agent", "oracle")

# fmt: off
CASES = [
    # --- the command line itself
    c("unknown-command", "evaluate", says="No such command 'evaluate'"),
    c("unknown-global-option", "--verbose", "list", "mini", says="--verbose"),
    c("eval-no-target", "eval", says="TARGET"),
    c("list-no-target", "list", says="TARGET"),
    c("unknown-eval-option", *EVAL, "--epoch", "2", says="--epoch"),
    c("option-without-value", *EVAL, "--epochs", says="--epochs"),
    # --- counts and limits: >= 1, > 0, numbers
    c("epochs-zero", *ORACLE, "--epochs", "0", says="--epochs"),
    c("epochs-negative", *ORACLE, "--epochs", "-3", says="--epochs"),
    c("epochs-word", *ORACLE, "--epochs", "two", says="--epochs"),
    c("epochs-fraction", *ORACLE, "--epochs", "1.5", says="--epochs"),
    c("max-samples-zero", *ORACLE, "--max-samples", "0", says="--max-samples"),
    c("max-samples-negative", *ORACLE, "--max-samples", "-1", says="--max-samples"),
    c("time-limit-zero", *SCRIPTED, "--time-limit", "0", says="--time-limit"),
    c("time-limit-negative", *SCRIPTED, "--time-limit", "-1", says="--time-limit"),
    c("time-limit-word", *SCRIPTED, "--time-limit", "1h", says="--time-limit"),
    c("working-limit-zero", *SCRIPTED, "--working-limit", "0", says="--working-limit"),
    c("working-limit-negative", *SCRIPTED, "--working-limit", "-60", says="--working-limit"),
    c("token-limit-zero", *SCRIPTED, "--token-limit", "0", says="--token-limit"),
    c("token-limit-negative", *SCRIPTED, "--token-limit", "-5", says="--token-limit"),
    c("message-limit-zero", *SCRIPTED, "--message-limit", "0", says="--message-limit"),
    c("cost-limit-zero", *SCRIPTED, "--cost-limit", "0", says="--cost-limit"),
    c("cost-limit-negative", *SCRIPTED, "--cost-limit", "-1", says="--cost-limit"),
    c("cost-limit-nan", *SCRIPTED, "--cost-limit", "nan", says="--cost-limit"),
    c("cost-limit-inf", *SCRIPTED, "--cost-limit", "inf", says="--cost-limit"),
    c("cost-limit-no-price", *SCRIPTED, "--cost-limit", "5", says="--model-cost-config"),
    c("prices-missing", *SCRIPTED, "--cost-limit", "5", "--model-cost-config", "{tmp}/nope.yaml", says="nope.yaml"),
    c("prices-bad-yaml", *SCRIPTED, "--cost-limit", "5", "--model-cost-config", "{prices_bad_yaml}", says="prices_bad.yaml"),
    c("prices-bad-field", *SCRIPTED, "--cost-limit", "5", "--model-cost-config", "{prices_field_yaml}", says="prices_field.yaml"),
    c("prices-not-mapping", *SCRIPTED, "--cost-limit", "5", "--model-cost-config", "{prices_list_yaml}", says="prices_list.yaml"),
    c("prices-not-utf8", *SCRIPTED, "--cost-limit", "5", "--model-cost-config", "{prices_not_utf8_yaml}", says="not UTF-8"),
    # --- task parameters (-T): known keys, right types and values
    c("T-without-family", *ORACLE, "-T", "with_paper=false", says="--family"),
    c("T-unknown-key", *RCB, "-T", "bogus=1", says=("bogus", "researchcodebench")),
    c("T-bool-word", *RCB, "-T", "with_paper=perhaps", says="with_paper"),
    c("T-bool-number", *RCB, "-T", "with_paper=7", says="with_paper"),
    c("T-choice", *RCB, "-T", "mode=nope", says=("mode", "generate")),
    c("T-negative-timeout", *RCB, "-T", "timeout=-1", says="timeout"),
    c("T-zero-timeout", *RCB, "-T", "timeout=0", says="timeout"),
    c("T-word-timeout", *RCB, "-T", "timeout=soon", says="timeout"),
    c("T-no-equals", *RCB, "-T", "with_paper", says="KEY=VALUE"),
    c("T-empty-key", *RCB, "-T", "=1", says="KEY=VALUE"),
    c("T-bad-yaml", *RCB, "-T", "requirements=[numpy", says="requirements"),
    c("T-reserved-agent", *RCB, "-T", "agent=noop", says="--agent"),
    c("T-reserved-target", *RCB, "-T", "target=mini", says="TARGET"),
    c("T-reserved-sandbox", *RCB, "-T", "sandbox=local", says="--sandbox"),
    c("T-paperbench-judge", *PB, "-T", "judge=nope", says=("judge", "check")),
    c("T-paperbench-code-dev", *PB, "-T", "code_dev=maybe", says="code_dev"),
    c("T-paperbench-memory", *PB, "-T", "memory_gb=0", says="memory_gb"),
    c("T-paperbench-retries", *PB, "-T", "reproduce_retries=-1", says="reproduce_retries"),
    c("T-paperbench-retries-word", *PB, "-T", "reproduce_retries=twice", says="reproduce_retries"),
    c("T-researchgym-hint", *RG, "-T", "idea_hint=perhaps", says="idea_hint"),
    c("T-rebench-none-known", "eval", "mini", "--family", "rebench", "--agent", "oracle", "-T", "x=1", says=("x", "rebench")),
    # --- models
    c("model-no-provider", *EVAL, "--model", "gpt5", says=("gpt5", "PROVIDER/MODEL")),
    c("model-unknown-provider", *EVAL, "--model", "nosuch/x", says=("nosuch", "unknown model provider")),
    c("model-empty", *EVAL, "--model", "", says="--model"),
    c("model-no-name", *EVAL, "--model", "openai/", says="openai/"),
    c("model-no-key", *EVAL, "--model", "openai/gpt-5", says=("openai/gpt-5", "OPENAI_API_KEY"), OPENAI_API_KEY=""),
    c("model-unknown-scripted", *EVAL, "--model", "labcoat/nope", says="labcoat/scripted"),
    c("model-missing", *EVAL, says=("--model", "research")),
    c("model-role-no-equals", *SCRIPTED, "--model-role", "grader", says="ROLE=MODEL"),
    c("model-role-unknown-provider", *SCRIPTED, "--model-role", "grader=nosuch/x", says=("grader", "nosuch")),
    c("model-role-no-provider", *SCRIPTED, "--model-role", "grader=gpt5", says="grader"),
    c("model-arg-no-equals", *SCRIPTED, "-M", "script", says="KEY=VALUE"),
    c("model-arg-unknown", *SCRIPTED, "-M", "temperature=1", says="temperature"),
    c("script-missing", *SCRIPTED, "-M", "script={tmp}/nope.yaml", says="nope.yaml"),
    c("script-not-list", *SCRIPTED, "-M", "script={script_not_list_yaml}", says="list of turns"),
    c("script-bad-turn", *SCRIPTED, "-M", "script={script_bad_turn_yaml}", says="turn 1"),
    # --- agents, sandboxes, selection
    c("agent-unknown", *EVAL, "--agent", "nosuch", says="nosuch"),
    c("agent-empty-cli", *EVAL, "--agent", "cli:", says="cli:"),
    c("sandbox-unknown", *ORACLE, "--sandbox", "vm", says="--sandbox"),
    c("sandbox-local-rebench", "eval", "mini", "--task", "prefix_sum/main", "--agent", "oracle", "--sandbox", "local", says="bwrap"),
    c("family-unknown", "eval", "mini", "--family", "nosuch", "--agent", "oracle", says="--family"),
    c("task-unknown", "eval", "mini", "--task", "nosuch/main", "--agent", "oracle", says="nosuch/main"),
    c("task-other-family", "eval", "mini", "--family", "rebench", "--task", "adaptive-huber", "--agent", "oracle", says="adaptive-huber"),
    c("search-provider-bad", *SCRIPTED, "--search-provider", "bing", says="--search-provider"),
    # --- targets
    c("target-missing", "eval", "{tmp}/nowhere", "--agent", "oracle", says="nowhere"),
    c("target-empty", "eval", "{empty}", "--agent", "oracle", says="no tasks found"),
    c("target-file", "eval", "{a_file}", "--agent", "oracle", says="is a file"),
    c("list-missing", "list", "{tmp}/nowhere", says="nowhere"),
    c("list-empty", "list", "{empty}", says="no tasks found"),
    c("list-file", "list", "{a_file}", says="is a file"),
    c("list-family-unknown", "list", "mini", "--family", "nosuch", says="--family"),
    c("list-empty-family", "list", "{empty}", "--family", "rebench", says="no tasks"),
    # --- log folders
    c("log-dir-file", *ORACLE, "--log-dir", "{a_file}", says=("--log-dir", "is a file")),
    c("log-dir-proc", *ORACLE, "--log-dir", "/proc/labcoat-logs", says="--log-dir"),
    c("log-dir-read-only-fs", *ORACLE, "--log-dir", "/sys/kernel/labcoat-logs", says="--log-dir"),
    c("log-dir-in-use", *ORACLE, "--log-dir", "{locked}", says=("in use", "--log-dir")),
    c("validate-log-dir-file", "validate", "mini", "--task", "adaptive-huber", "--log-dir", "{a_file}", says="--log-dir"),
    c("validate-log-dir-in-use", "validate", "mini", "--task", "adaptive-huber", "--log-dir", "{locked}", says="in use"),
    # --- task data: one line naming the file (list, eval and check)
    c("data-pb-no-rubric", "list", "{pb_no_rubric}", says="rubric.json"),
    c("data-pb-no-paper", "list", "{pb_no_paper}", says="paper.md"),
    c("data-pb-rubric-not-utf8", "list", "{pb_rubric_not_utf8}", says=("rubric.json", "not UTF-8")),
    c("data-pb-rubric-not-json", "list", "{pb_rubric_not_json}", says=("rubric.json", "JSON")),
    c("data-pb-zero-weights", "list", "{pb_zero_weights}", says=("rubric.json", "weight 0")),
    c("data-pb-unknown-leaf", "list", "{pb_unknown_leaf}", says=("labcoat.yaml", "no-such-leaf")),
    c("data-pb-config-not-utf8", "list", "{pb_config_not_utf8}", says=("config.yaml", "not UTF-8")),
    c("data-pb-config-bad-yaml", "list", "{pb_config_bad_yaml}", says="config.yaml"),
    c("data-rb-sidecar-not-utf8", "list", "{rb_sidecar_not_utf8}", says=("labcoat.yaml", "not UTF-8")),
    c("data-rb-no-oracle-files", "list", "{rb_no_oracle_files}", says=("oracle.files", "reference")),
    c("data-rb-sidecar-bad-yaml", "list", "{rb_sidecar_bad_yaml}", says="labcoat.yaml"),
    c("data-rb-sidecar-unknown-field", "list", "{rb_sidecar_unknown_field}", says="bogus_field"),
    c("data-rcb-papers-not-utf8", "list", "{rcb_papers_not_utf8}", says=("papers.yaml", "not UTF-8")),
    c("data-rcb-papers-bad-yaml", "list", "{rcb_papers_bad_yaml}", says="papers.yaml"),
    c("data-rg-sidecar-not-utf8", "list", "{rg_sidecar_not_utf8}", says=("labcoat.yaml", "not UTF-8")),
    c("data-eval-pb-no-rubric", "eval", "{pb_no_rubric}", "--agent", "oracle", "--json", "--log-dir", "{tmp}/logs", says="rubric.json", code=1),
    c("data-eval-rcb-paper-not-utf8", "eval", "{rcb_paper_not_utf8}", "--agent", "oracle", "--log-dir", "{tmp}/logs", says=("paper2code_paper.tex", "not UTF-8")),
    c("data-eval-rg-description-not-utf8", "eval", "{rg_description_not_utf8}", "--agent", "oracle", "--log-dir", "{tmp}/logs", says=("task_description.md", "not UTF-8")),
    c("data-check-pb-zero-weights", "check", "{pb_zero_weights}", "--no-build", "--json", says="weight 0", code=2),
    c("data-validate-rb-no-oracle-files", "validate", "{rb_no_oracle_files}", "--task", "fix_embedding", "--json", "--log-dir", "{tmp}/v", says="oracle.files", code=1),
    # --- bounds on task data: size, nesting, aliases (docs/cli.md, "Limits on input")
    c("data-pb-rubric-deep", "list", "{pb_rubric_deep}", says=("rubric.json", "nested more than 100")),
    c("data-pb-config-huge", "list", "{pb_config_huge}", says=("config.yaml", "larger than 1 MB")),
    c("data-rb-manifest-huge", "list", "{rb_manifest_huge}", says=("manifest.yaml", "larger than 1 MB")),
    c("data-rb-sidecar-deep", "list", "{rb_sidecar_deep}", says=("labcoat.yaml", "nested more than 100")),
    c("data-rb-sidecar-aliases", "list", "{rb_sidecar_aliases}", says=("labcoat.yaml", "aliases")),
    c("rubric-stats-deep", "rubric", "stats", "{pb_rubric_deep}/paperbench", says=("rubric.json", "nested")),
    # --- ids are plain text, given once; texts are text; scales point the right way
    c("data-pb-config-duplicate-id", "list", "{pb_config_dup_id}", says=("config.yaml", "duplicate key 'id'")),
    c("data-rcb-papers-duplicate-key", "list", "{rcb_papers_dup_key}", says=("papers.yaml", "duplicate key 'id'")),
    c("data-pb-id-newline", "list", "{pb_id_newline}", says=("config.yaml: id:", "U+000A")),
    c("data-pb-id-bidi", "list", "{pb_id_bidi}", says=("config.yaml: id:", "U+202E RIGHT-TO-LEFT OVERRIDE")),
    c("data-rcb-id-control", "list", "{rcb_id_control}", says=("papers.yaml: [0].id:", "U+0007")),
    c("data-rb-task-name-newline", "list", "{rb_task_newline}", says=("labcoat.yaml: tasks:", "U+000A")),
    c("data-rg-folder-bidi", "list", "{rg_folder_bidi}", says=("id:", "U+202E", "\\u202e")),
    c("data-pb-paper-not-utf8", "list", "{pb_paper_not_utf8}", says=("paper.md", "not UTF-8")),
    c("data-rg-sota-below-baseline", "list", "{rg_sota_below_baseline}", says=("labcoat.yaml: primary", "does not beat baseline")),
    c("secrets-binary", *ORACLE, "--secrets", "{secrets_binary_env}", says=("secrets_binary.env: line 1", "not UTF-8")),
    c("secrets-not-key-value", *ORACLE, "--secrets", "{secrets_bad_env}", says=("secrets_bad.env: line 2", "KEY=VALUE")),
    # --- bounds on the run and on what an error line quotes
    c("epochs-huge", *ORACLE, "--epochs", "1000000", says=("--epochs 1000000", "LABCOAT_MAX_RUN_SAMPLES")),
    c("epochs-times-samples", *ORACLE, "--epochs", "2", says=("--epochs 2", "14 samples"), LABCOAT_MAX_RUN_SAMPLES="10"),
    c("T-huge-value", *RCB, "-T", "timeout=" + "9x" * 50_000, says=("-T timeout=", "…")),
    c("T-huge-words", *RCB, "-T", "mode=" + "a " * 50_000, says=("mode", " … ")),
    c("log-dir-name-too-long", *ORACLE, "--log-dir", "{tmp}/" + "d" * 300, says=("--log-dir", "too long")),
    c("log-dir-past-path-max", *ORACLE, "--log-dir", "{tmp}/" + "/".join(["d" * 200] * 25), says=("--log-dir", "…")),
    # --- environment variables labcoat parses: the variable and what it takes
    c("env-operation-timeout", *ORACLE, says=("LABCOAT_TASK_OPERATION_TIMEOUT='abc'", "seconds > 0"), LABCOAT_TASK_OPERATION_TIMEOUT="abc"),
    c("env-operation-timeout-negative", "list", "mini", says="LABCOAT_TASK_OPERATION_TIMEOUT", LABCOAT_TASK_OPERATION_TIMEOUT="-5"),
    c("env-build-timeout", *ORACLE, says=("LABCOAT_ENV_BUILD_TIMEOUT", "whole number"), LABCOAT_ENV_BUILD_TIMEOUT="1h"),
    c("env-sandbox-disk", *ORACLE, says=("LABCOAT_SANDBOX_DISK='garbage'", "auto, loop, fuse, watch, off"), LABCOAT_SANDBOX_DISK="garbage"),
    c("env-gpus", "list", "mini", says=("LABCOAT_GPUS", "0 for none"), LABCOAT_GPUS="two"),
    c("env-max-run-samples", *ORACLE, says=("LABCOAT_MAX_RUN_SAMPLES", "whole number"), LABCOAT_MAX_RUN_SAMPLES="0"),
    c("env-keep-sandboxes", "list", "mini", says=("LABCOAT_KEEP_SANDBOXES", "1 or 0"), LABCOAT_KEEP_SANDBOXES="yes"),
    c("env-cgroups", "check", "mini", "--no-build", says=("LABCOAT_SANDBOX_CGROUPS", "1 or 0"), LABCOAT_SANDBOX_CGROUPS="off"),
    c("env-search-provider", *SCRIPTED, says=("LABCOAT_SEARCH_PROVIDER", "tavily"), LABCOAT_SEARCH_PROVIDER="bing"),
    c("env-huge-value", "list", "mini", says=("LABCOAT_GPUS", "…"), LABCOAT_GPUS="7" * 100_000),
    # --- validate and check options
    c("validate-max-samples-zero", "validate", "mini", "--max-samples", "0", says="--max-samples"),
    c("validate-missing", "validate", "{tmp}/nowhere", says="nowhere"),
    c("validate-task-unknown", "validate", "mini", "--task", "nosuch", says="nosuch"),
    c("check-missing", "check", "{tmp}/nowhere", says="nowhere"),
    c("check-empty", "check", "{empty}", says="no tasks found"),
    c("check-task-unknown", "check", "mini", "--task", "nosuch", "--no-build", says="nosuch"),
    # --- report
    c("report-no-logdir", "report", says="LOGDIR"),
    c("report-missing", "report", "{tmp}/nowhere", "-o", "{tmp}/r.html", says="nowhere"),
    c("report-empty-folder", "report", "{empty}", "-o", "{tmp}/r.html", says="no readable .eval logs"),
    c("report-only-bad-logs", "report", "{logs_bad}", "-o", "{tmp}/r.html", says="no readable .eval logs"),
    c("report-output-unwritable", "report", "{logs_good}", "-o", "/proc/labcoat/r.html", says="/proc/labcoat/r.html"),
    c("report-output-read-only-fs", "report", "{logs_good}", "-o", "/sys/kernel/r.html", says="/sys/kernel/r.html"),
    c("report-output-folder", "report", "{logs_good}", "-o", "{a_folder}", says="is a folder"),
    c("report-humans-missing", "report", "{logs_good}", "--humans", "{tmp}/none.csv", says="--humans"),
    c("report-humans-columns", "report", "{logs_good}", "-o", "{tmp}/r.html", "--humans", "{humans_bad_csv}", says="missing column"),
    c("report-humans-number", "report", "{logs_good}", "-o", "{tmp}/r.html", "--humans", "{humans_nan_csv}", says="not a number"),
    c("report-hourly-negative", "report", "{logs_good}", "--human-hourly-usd", "-5", says="--human-hourly-usd"),
    # --- rubric stats
    c("rubric-no-subcommand-typo", "rubric", "stat", "mini", says="No such command"),
    c("rubric-missing", "rubric", "stats", "{tmp}/nowhere", says="nowhere"),
    c("rubric-no-papers", "rubric", "stats", "{empty}", says="no PaperBench paper folders"),
    c("rubric-file-not-utf8", "rubric", "stats", "{rubric_not_utf8_json}", says="not UTF-8"),
    c("rubric-file-not-json", "rubric", "stats", "{not_json_json}", says="JSON"),
    c("rubric-file-bad-tree", "rubric", "stats", "{rubric_bad_json}", says="rubric_bad.json"),
    c("rubric-paper-zero-weights", "rubric", "stats", "{pb_zero_weights}/paperbench", says="weight 0"),
    # --- judge-eval
    c("judge-eval-no-judge", "judge-eval", "{no_trees}", says="--judge"),
    c("judge-eval-unknown-judge", "judge-eval", "{no_trees}", "--judge", "nosuch", says="--judge"),
    c("judge-eval-missing", "judge-eval", "{tmp}/nowhere", "--judge", "dummy", says="nowhere"),
    c("judge-eval-no-trees", "judge-eval", "{no_trees}", "--judge", "dummy", says="expected_result.json"),
    c("judge-eval-llm-no-model", "judge-eval", "{no_trees}", "--judge", "llm", says="--model"),
    c("judge-eval-score-range", "judge-eval", "{no_trees}", "--judge", "dummy", "--score", "2", says="--score"),
    # --- researchcodebench aggregate
    c("aggregate-missing", "researchcodebench", "aggregate", "{tmp}/nowhere", says="nowhere"),
    c("aggregate-corrupt-log", "researchcodebench", "aggregate", "{corrupt_eval}", says=("corrupt.eval", "not a readable log")),
    c("aggregate-empty-log", "researchcodebench", "aggregate", "{empty_eval}", says=("empty.eval", "empty file")),
    c("aggregate-only-bad-logs", "researchcodebench", "aggregate", "{logs_bad}", says="no logs of a researchcodebench run"),
    c("aggregate-not-json", "researchcodebench", "aggregate", "{not_json_json}", says="not_json.json"),
    c("aggregate-wrong-shape", "researchcodebench", "aggregate", "{stats_wrong_shape_json}", says="results"),
    c("aggregate-text-file", "researchcodebench", "aggregate", "{notes_txt}", says="notes.txt"),
    c("aggregate-empty-folder", "researchcodebench", "aggregate", "{empty}", says="no logs"),
]
# fmt: on

# Valid input: these must succeed (exit 0), whatever else they print.
VALID = [
    c("list-mini", "list", "mini", code=0),
    c("list-json", "list", "mini", "--json", code=0),
    c("rubric-stats-mini", "rubric", "stats", str(MINI / "paperbench"), code=0),
    c("report-mixed-logs", "report", "{logs_mixed}", "-o", "{tmp}/r.html", code=0),
    c("aggregate-mixed-logs", "researchcodebench", "aggregate", "{logs_mixed}", code=0),
    c("check-no-build", "check", "mini", "--family", "researchcodebench", "--no-build", code=0),
]


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("corpus")
    found: dict[str, Path] = {}
    found.update(build_broken_tasks(root / "tasks"))
    found.update(build_bad_logs(root / "logs"))
    found.update(build_bad_files(root / "files"))
    locked = root / "locked-logs"
    with log_dir_lock(str(locked)):  # another run holds this log folder
        yield {**{k: str(v) for k, v in found.items()}, "locked": str(locked)}


@contextlib.contextmanager
def alarm(seconds: int) -> Iterator[None]:
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"the command ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_case(
    case: Case, paths: dict[str, str], tmp: Path, capsys, monkeypatch
) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp)  # default log folders (logs/...) land here, not in the checkout
    for key, value in case.env:
        monkeypatch.setenv(key, value)
    args = [a.format(tmp=tmp, **paths) for a in case.args]
    with alarm(CASE_TIMEOUT_S):
        return run_cli_captured(capsys, *args)


# What else may be on stderr beside the one error line: progress and per-log warnings
ALSO_ALLOWED = ("labcoat report: ", "labcoat: warning: ")


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_is_one_line_and_exit_2(case: Case, paths, tmp_path, capsys, monkeypatch) -> None:
    code, out, err = run_case(case, paths, tmp_path, capsys, monkeypatch)
    assert "Traceback" not in out + err, err
    assert code == case.code, f"exit {code}, expected {case.code}: {err}"
    if case.code == 2 and "--json" in case.args:  # check: the problems are its output
        assert any(piece in json.dumps(json.loads(out)) for piece in case.says), out
        return
    if case.code == 2:
        if case.args[0] != "list":  # list shows the tasks that load beside the broken ones
            assert out == "", f"stdout should be empty on an error, got: {out[:500]}"
        lines = [line for line in err.splitlines() if line.strip()]
        others = [line for line in lines[:-1] if not line.startswith(ALSO_ALLOWED)]
        assert lines and not others, f"expected one line on stderr, got:\n{err}"
        message = lines[-1]
        assert message.startswith("labcoat: error: "), message
        assert len(message) <= MAX_LINE + len("labcoat: "), f"{len(message)} characters"
    else:  # the others run; the broken task is reported with its reason, as JSON
        assert json.loads(out), out
        message = out
    for piece in case.says:
        assert piece in message, f"{piece!r} not in: {message}"


@pytest.mark.parametrize("case", VALID, ids=[case.id for case in VALID])
def test_valid_input_succeeds(case: Case, paths, tmp_path, capsys, monkeypatch) -> None:
    code, out, err = run_case(case, paths, tmp_path, capsys, monkeypatch)
    assert "Traceback" not in out + err, err
    assert code == 0, err


def test_the_corpus_is_large() -> None:
    assert len(CASES) >= 90
    assert len({case.id for case in CASES + VALID}) == len(CASES) + len(VALID)


def test_unreadable_logs_are_one_warning_each(paths, tmp_path, capsys, monkeypatch) -> None:
    case = c("report", "report", "{logs_mixed}", "-o", "{tmp}/r.html", code=0)
    code, _out, err = run_case(case, paths, tmp_path, capsys, monkeypatch)
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert code == 0 and (tmp_path / "r.html").is_file()
    assert len(warnings) == 3, err
    for name, why in (
        ("empty.eval", "empty file"),
        ("truncated.eval", "truncated or corrupt"),
        ("corrupt.eval", "truncated or corrupt"),
    ):
        assert any(name in w and why in w for w in warnings), err


def test_debug_shows_the_traceback(paths, tmp_path, capsys, monkeypatch) -> None:
    case = c("debug", "--debug", "list", "{tmp}/nowhere")
    code, _out, err = run_case(case, paths, tmp_path, capsys, monkeypatch)
    assert code == 2 and "Traceback" in err and "nowhere" in err.splitlines()[-1]


def test_read_only_folder_as_a_user(paths, tmp_path, capsys, monkeypatch) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write into a read-only folder; /sys covers a read-only place")
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    case = c("ro", *ORACLE, "--log-dir", str(folder / "logs"))
    code, _out, err = run_case(case, paths, tmp_path, capsys, monkeypatch)
    assert code == 2 and "--log-dir" in err and len(err.strip().splitlines()) == 1

"""A METR-format suite whose families cannot run here (tests/data/unbuildable_suite: GPUs,
a secret, get_tasks() that needs its environment, requirements that cannot install
offline) beside one that can: `list` and `eval --agent noop` name each family that
cannot run in one line with its reason, run the one that can, and print no traceback.

No network: pip's index is a local port nothing listens on, so pip fails at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli_captured

from labcoat.sandbox import _environment

SUITE = Path(__file__).parents[1] / "data" / "unbuildable_suite"
# family -> words of the reason its one line gives
CANNOT_LIST = {
    "needs_secret": "LABCOAT_UNBUILDABLE_SUITE_TOKEN",
    "tasks_need_env": "labcoat-unbuildable-suite-helper==1.0",
}
CANNOT_RUN = {
    **CANNOT_LIST,
    "needs_gpu": "needs 64 GPU(s)",
    "offline_requirements": "labcoat-unbuildable-suite-no-such-package==1.0",
}


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # refused at once
    monkeypatch.delenv("LABCOAT_UNBUILDABLE_SUITE_TOKEN", raising=False)
    monkeypatch.setattr(_environment, "_failures", {})


def _lines_naming(family: str, table: str) -> list[str]:
    """The table's rows whose task is the family's (`fam/task`, or `fam` not loaded)."""
    return [row for row in table.splitlines() if row.startswith((f"│ {family}/", f"│ {family} "))]


def test_list_names_each_family_it_cannot_list_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli_captured(capsys, "list", str(SUITE))
    assert "Traceback" not in out + err
    assert code == 2, err  # docs/cli.md: some tasks could not be loaded
    for task in ("works/main", "needs_gpu/main", "offline_requirements/main"):
        assert task in out, out  # their tasks are spelled out: listed, nothing built
    errors = [line for line in err.splitlines() if line.startswith("labcoat: error:")]
    assert len(errors) == len(CANNOT_LIST), err
    for family, reason in CANNOT_LIST.items():
        [line] = [e for e in errors if f"task {family}:" in e]
        assert reason in line, line
    # listed, but what it asks for is known without building anything: one line
    [gpu] = [line for line in err.splitlines() if "needs_gpu" in line]
    assert (
        gpu.startswith("labcoat: needs_gpu: cannot run here: ") and CANNOT_RUN["needs_gpu"] in gpu
    )
    # whether requirements install is known only by installing them (eval, check)
    assert "offline_requirements" not in err
    # pip's reason names the requirements file in brackets: printed as it is
    assert f"[{SUITE / 'tasks_need_env' / 'requirements.txt'}]" in err


def test_eval_runs_the_family_that_can_and_names_each_other_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli_captured(
        capsys, "eval", str(SUITE), "--agent", "noop", "--log-dir", str(tmp_path / "logs")
    )
    assert "Traceback" not in out + err
    # docs/cli.md: what cannot run here is listed, not failed; the family that can passed
    assert code == 0, err
    table = out[out.rindex(f"labcoat eval {SUITE}") :]  # the results, after Inspect's panels
    [works] = _lines_naming("works", table)
    assert "noop" in works and "cannot" not in works, works
    for family, reason in CANNOT_RUN.items():
        [line] = _lines_naming(family, table)
        assert reason in line and "cannot run here: " in line, line  # no run: its reason


def test_tasks_named_load_their_family_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """`--task works/main` runs no other family's get_tasks() (nor builds its environment)."""
    from labcoat.families import discover, select

    capsys.readouterr()
    entries = select(discover(SUITE, task_ids=["works/main"]), ["works/main"], None)
    assert [e.id for e in entries] == ["works/main"]
    found = discover(SUITE, task_ids=["works/main"])
    assert {e.id.split("/")[0] for e in found} == {"works"}, [e.id for e in found]
    assert "get_tasks()" not in capsys.readouterr().err

"""Every place agent code can write, and every file its uid owns, is declared.

For each kind of sandbox (the agent's, a score tool's, a grader's, a reproduction's, and
agent code a grader runs the way labcoat's bundled graders run it) in each mode this
user can run, a probe (writable_probe.py) runs with the agent's identity inside that
sandbox, built as its real call site builds it, walks the whole visible file system and
lists what it can write and what its uid owns. Both lists must be exactly the declared
ones (`labcoat.sandbox.declared_places`): an undeclared place fails, and so does a
declared one that is not there (a declaration that says more than the sandbox gives
hides the next place that opens).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import tempfile
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from labcoat.families.paperbench._layout import SUBMISSION_DIR
from labcoat.families.rebench._state import SampleState
from labcoat.grading import grader_session
from labcoat.sandbox import AGENT_HOME, BwrapConfig, BwrapSession, give_to_agent, isolation
from labcoat.sandbox._writable import (
    DEVICES,
    KERNEL,
    NESTED_GRANTED,
    SandboxKind,
    absent,
    declared_places,
    undeclared,
)
from labcoat.suites import SUITES_DIR

PROBE = (Path(__file__).parent / "writable_probe.py").read_text()
SCRATCH = "/tmp/labcoat-grade"
"""Where labcoat's bundled graders keep what they let the agent's code write."""

# How a bundled grader runs agent code (agent_code.run): as the agent user where the
# sandbox has a root apart from it, else in the nested sandbox (LABCOAT_AS_AGENT) that may
# write only the folders the grader grants.
NESTED_RUN = textwrap.dedent(
    f"""
    import os, subprocess, sys
    granted = {NESTED_GRANTED!r}
    os.makedirs(granted, exist_ok=True)
    privileged = os.geteuid() == 0
    if privileged:
        os.chown(granted, 1000, 1000)
    prefix = os.environ.get("LABCOAT_AS_AGENT", "").split()
    jail = [*prefix, "--writable", granted, "--"] if prefix and not privileged else []
    drop = {{"user": 1000, "group": 1000, "extra_groups": []}} if privileged else {{}}
    done = subprocess.run([*jail, sys.executable, "-c", sys.argv[1]], cwd=granted,
                          capture_output=True, text=True, **drop)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.exit(done.returncode)
    """
)


@pytest.fixture
def host_dirs() -> Iterator[Path]:
    """Host folders the sandboxes' users can reach (pytest's own are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="labcoat-test-writable-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@asynccontextmanager
async def sandbox_of(kind: SandboxKind, host: Path) -> AsyncIterator[tuple[BwrapSession, str]]:
    """The sandbox `kind` names, built as its call site builds it, and the user (None:
    the default) whose code is measured there."""
    if kind is SandboxKind.AGENT:
        session = await BwrapSession.create(BwrapConfig(network=True))
        try:
            yield session, "agent"
        finally:
            await session.close()
        return
    task = host / "task"
    task.mkdir()
    (task / "heldout.txt").write_text("the grader's own\n")
    workspace = host / "workspace"
    workspace.mkdir()
    (workspace / "solution.py").write_text("print('the agent wrote this')\n")
    give_to_agent(workspace)
    if kind is SandboxKind.SCORE:  # RE-Bench's operations (families/rebench/_family.py)
        state = SampleState.create(task, None, "sample-uuid")
        try:
            async with grader_session(
                protected=None,
                workspace=workspace,
                workspace_target=AGENT_HOME,
                workspace_writable=True,
                binds=state.binds(),
            ) as session:
                yield session, "agent"
        finally:
            state.remove()
    elif kind is SandboxKind.REPRODUCTION:  # PaperBench's (families/paperbench/_reproduce.py)
        async with grader_session(
            protected=None,
            workspace=workspace,
            workspace_target=SUBMISSION_DIR,
            workspace_writable=True,
            workdir=SUBMISSION_DIR,
            network=True,
        ) as session:
            yield session, "agent"
    else:  # ResearchGym's graders (families/researchgym/_grading.py)
        async with grader_session(
            protected=task,
            workspace=workspace,
            workspace_target="/root/workspace",
            workspace_writable=False,
        ) as session:
            grader = "root" if "root" in session.users else "agent"
            yield session, grader if kind is SandboxKind.NESTED else "agent"


async def probe(kind: SandboxKind, host: Path) -> dict:
    async with sandbox_of(kind, host) as (session, user):
        run_as = user if user in session.users else None
        if kind is SandboxKind.NESTED:
            argv = ["python3", "-c", NESTED_RUN, PROBE]
        else:
            argv = ["python3", "-c", PROBE]
        result = await session.exec(argv, user=run_as, cwd="/", timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout)


NETWORKED = (SandboxKind.AGENT, SandboxKind.REPRODUCTION)
"""The kinds the test builds with the filtering proxy (as a task with network has them)."""


@pytest.mark.parametrize("kind", list(SandboxKind), ids=str)
async def test_every_writable_place_is_declared(
    kind: SandboxKind, sandbox_mode: str, host_dirs: Path
) -> None:
    if sandbox_mode == "one-user" and os.geteuid() == 0:
        # root's stand-in for one user maps the agent to host uid 0: host root's files are
        # its own, and so is every sysctl root may write (a hole of that stand-in alone;
        # scripts/test-as-users.sh runs this as an ordinary user, the mode itself)
        pytest.skip("one user as root is not the one-user mode: run as an ordinary user")
    found = await probe(kind, host_dirs)
    mode = str(isolation())
    declared = declared_places(kind, mode, network=kind in NETWORKED)
    assert found["uid"] == 1000, found["uid"]
    report = {
        "undeclared writable": undeclared(found["writable"], declared.writable),
        "declared writable, not there": absent(declared.writable, found["writable"]),
    }
    if declared.owned is not None:
        report["undeclared owned"] = undeclared(
            found["owned"], declared.owned + declared.owned_maybe
        )
        report["declared owned, not there"] = absent(declared.owned, found["owned"])
    assert not any(report.values()), json.dumps({mode: report}, indent=1)


GRADERS_THAT_SCRUB = [
    # the mini ResearchGym graders' one agent_code.py (class-incremental's scrub)
    pytest.param(
        SUITES_DIR / "mini/researchgym/class-incremental/grading/agent_code.py",
        "writable_roots",
        id="mini-researchgym",
    ),
    pytest.param(
        SUITES_DIR / "gpu/researchgym/noisy-labels/grading/grade.py",
        "_writable_roots",
        id="noisy-labels",
    ),
]


def _function_source(path: Path, name: str) -> str:
    """`name`'s source, after the module's literal constants (it may read them): it runs
    in a sandbox without the grader's packages."""
    text = path.read_text()
    tree = ast.parse(text)
    constants = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            try:
                ast.literal_eval(node.value)
            except ValueError:
                continue
            constants.append(ast.get_source_segment(text, node) or "")
    [function] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return "\n".join([*constants, ast.get_source_segment(text, function) or ""])


@pytest.mark.parametrize(("grader", "roots_of"), GRADERS_THAT_SCRUB)
async def test_the_graders_scrubs_reach_every_declared_place(
    grader: Path, roots_of: str, sandbox_mode: str, host_dirs: Path
) -> None:
    """A bundled grader that runs agent code more than once removes what the agent user
    left between runs on the mounts `_writable_roots` finds: every place the agent user
    can keep a file in a grader's sandbox (the declared lists) must lie under one of them
    (one user: the nested sandbox writes only the folders the grader grants, which it
    removes whole)."""
    if sandbox_mode == "one-user":
        pytest.skip("one user: agent code writes only the grader's own folders, removed whole")
    code = "\n".join(
        [
            "import json, os",
            "from pathlib import Path",
            _function_source(grader, roots_of),
            f"print(json.dumps([str(p) for p in {roots_of}()]))",
        ]
    )
    async with sandbox_of(SandboxKind.GRADER, host_dirs) as (session, _):
        user = "root" if "root" in session.users else None
        result = await session.exec(["python3", "-c", code], user=user, timeout=120)
    assert result.returncode == 0, result.stderr
    roots = [f"{root.rstrip('/')}/**" for root in json.loads(result.stdout)]
    mode = str(isolation())
    places = [
        place
        for kind in (SandboxKind.GRADER, SandboxKind.NESTED)
        for place in declared_places(kind, mode, network=False).writable
        if place not in DEVICES + KERNEL  # they hold no file to leave
    ]
    assert places and not undeclared(places, roots), (roots, undeclared(places, roots))

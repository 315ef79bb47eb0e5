"""The agent's workspace as a git repository: started at setup, kept with the score.

At setup the starting files are committed (files over LARGE_FILE_MB are left out and
listed in .git/info/exclude) in the agent's own sandbox (the agent may then
commit as it likes). When the agent has stopped, a fresh sandbox holding nothing but the
workspace commits whatever is left uncommitted and packs the history: `git log --stat`
plus a `git bundle` of every ref, base64-encoded when small enough, so what changed and
when can be replayed later (`git clone workspace.bundle`).

The repository is the agent's: the capture trusts none of it but its objects and refs
(see `_capture_script`), reads the workspace read-only, runs as the agent user in a
sandbox that holds no secrets, and gives up (no history, never an error) at its timeout.
"""

from __future__ import annotations

import base64
import shlex
from pathlib import Path
from typing import Any

from inspect_ai.util import sandbox

from labcoat._errors import LabcoatError
from labcoat.grading import grader_session

MAX_BUNDLE_BYTES = 2 * 1024 * 1024
MAX_TEXT = 20_000
LABCOAT_IDENTITY = "-c user.name=labcoat -c user.email=labcoat@localhost"
SAFE = "-c core.hooksPath=/dev/null -c core.fsmonitor=false -c commit.gpgsign=false"
START_MESSAGE = "labcoat: the task's starting files"
FINAL_MESSAGE = "labcoat: final state, after the agent stopped"
_LOG = "/tmp/labcoat-git-log.txt"
_DIFFSTAT = "/tmp/labcoat-git-diffstat.txt"
_BUNDLE = "/tmp/labcoat-workspace.bundle"
_NO_GIT = 127
LARGE_FILE_MB = 10
HISTORY_TIMEOUT_S = 120.0
# Large files (datasets, checkpoints) stay out of the history: each is listed, by name,
# in .git/info/exclude, so the bundle stays small and `git add` fast.
_EXCLUDE_LARGE = (
    f"find . -path ./.git -prune -o -type f -size +{LARGE_FILE_MB}M -print "
    "| sed 's|^\\./|/|' >> .git/info/exclude"
)


def _init_script() -> str:
    return f"""set -e
command -v git >/dev/null || exit {_NO_GIT}
git init -q
git config user.name agent
git config user.email agent@localhost
{_EXCLUDE_LARGE}
git {SAFE} add -A
git {SAFE} {LABCOAT_IDENTITY} commit -q --allow-empty -m {shlex.quote(START_MESSAGE)}
"""


async def init_workspace_repo(workdir: str) -> dict[str, Any]:
    """Make the agent's workspace a repository whose first commit is the starting files."""
    result = await sandbox().exec(["bash", "-c", _init_script()], cwd=workdir)
    if result.returncode == _NO_GIT:
        return {"initialized": False, "note": "git is not installed in the agent's sandbox"}
    if not result.success:
        raise LabcoatError(f"could not make the workspace a git repository: {result.stderr}")
    return {"initialized": True}


# The capture never reads the agent's repository config, hooks or attributes: git runs
# on a repository of labcoat's own in /tmp (a config written here, no hooks, attributes
# that unset every driver) that borrows the agent's objects (an alternate) and copies its
# refs; the workspace is the work tree, read-only. Nothing the agent wrote can name a
# program for git to run: filters (clean/smudge/process), fsmonitor, hooks, diff/textconv
# drivers, pagers, gpg, include.path, core.worktree, submodules' own repositories.
_GIT_DIR = "/tmp/labcoat-history.git"
_GIT_HOME = "/tmp/labcoat-git-home"
_CONFIG = """[core]
\trepositoryformatversion = {version}
\tbare = false
\tfilemode = true
\tsymlinks = true
\tlogAllRefUpdates = false
\thooksPath = /dev/null
\tfsmonitor = false
\tuntrackedCache = false
\tattributesFile = /dev/null
\texcludesFile = /dev/null
\tautocrlf = false
\tsafecrlf = false
\tpager = cat
[commit]
\tgpgSign = false
[log]
\tshowSignature = false
[gc]
\tauto = 0
[maintenance]
\tauto = false
[diff]
\tignoreSubmodules = all
[status]
\tsubmoduleSummary = false
[submodule]
\trecurse = false
[user]
\tname = labcoat
\temail = labcoat@localhost
"""
_ATTRIBUTES = "* !filter !diff !merge !text !eol !ident !working-tree-encoding !export-subst"
_ENV = {
    "GIT_DIR": _GIT_DIR,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "HOME": _GIT_HOME,
    "XDG_CONFIG_HOME": _GIT_HOME,
}
_UNSET = (
    "GIT_EXTERNAL_DIFF GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS SSH_ASKPASS GIT_EDITOR "
    "GIT_SEQUENCE_EDITOR GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_INDEX_FILE "
    "GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_COMMON_DIR GIT_NAMESPACE "
    "GIT_GRAFT_FILE GIT_REPLACE_REF_BASE GIT_TRACE"
)


def _capture_script(workdir: str) -> str:
    w = shlex.quote(workdir)
    src = shlex.quote(f"{workdir}/.git")
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in _ENV.items())
    g = "git -c safe.directory='*'"
    no_drivers = "--no-textconv --no-ext-diff"
    return f"""set -u
export {exports} GIT_WORK_TREE={w}
unset {_UNSET}
mkdir -p "$HOME" "$GIT_DIR/objects/info" "$GIT_DIR/refs/heads" "$GIT_DIR/info"
cd {w} || exit 4
version=0
format=
if [ -d {src} ] && [ ! -L {src} ] && [ -d {src}/objects ]; then
  # read as a file, not as git config: no include.path, nothing but the object format
  format=$(sed -n 's/^[[:space:]]*objectformat[[:space:]]*=[[:space:]]*\\([a-z0-9]*\\).*/\\1/Ip' \\
    {src}/config 2>/dev/null | tail -n 1)
  echo {src}/objects > "$GIT_DIR/objects/info/alternates"
  cp -R {src}/refs/. "$GIT_DIR/refs/" 2>/dev/null
  for f in HEAD packed-refs shallow info/exclude; do
    [ -f {src}/$f ] && cp {src}/$f "$GIT_DIR/$f" 2>/dev/null
  done
  repo=1
else
  repo=0
fi
[ -f "$GIT_DIR/HEAD" ] || echo "ref: refs/heads/main" > "$GIT_DIR/HEAD"
if [ -n "$format" ] && [ "$format" != sha1 ]; then version=1; fi
printf {shlex.quote(_CONFIG)} | sed "s/{{version}}/$version/" > "$GIT_DIR/config"
[ "$version" = 1 ] && printf '[extensions]\\n\\tobjectFormat = %s\\n' "$format" >> "$GIT_DIR/config"
echo {shlex.quote(_ATTRIBUTES)} > "$GIT_DIR/info/attributes"
if ! {g} rev-parse --git-dir >/dev/null 2>&1; then
  echo "NOTE: the workspace's repository could not be read; its history starts here"
  echo "ref: refs/heads/main" > "$GIT_DIR/HEAD"
  rm -f "$GIT_DIR/objects/info/alternates" "$GIT_DIR/packed-refs" "$GIT_DIR/shallow"
  rm -rf "$GIT_DIR/refs" && mkdir -p "$GIT_DIR/refs/heads"
elif [ "$repo" = 0 ]; then
  echo "NOTE: the workspace held no repository at the end; its history starts here"
fi
find . -path ./.git -prune -o -type f -size +{LARGE_FILE_MB}M -print \\
  | sed 's|^\\./|/|' >> "$GIT_DIR/info/exclude"
# a path git cannot add (a nested repository without a commit) must not lose the rest
if ! {g} add -A --ignore-errors 2>/tmp/labcoat-git-add.err; then
  echo "NOTE: not recorded: $(grep -m 3 . /tmp/labcoat-git-add.err | tr '\\n' ' ')"
fi
{g} commit -q --allow-empty --no-verify --no-status -m {shlex.quote(FINAL_MESSAGE)} || exit 3
{g} log --all {no_drivers} --no-show-signature --date=iso-strict --stat \\
  --format='commit %H%nDate:   %ad%nAuthor: %an%n%n    %s%n' > {_LOG}
root=$({g} rev-list --max-parents=0 HEAD | tail -n 1)
{g} diff {no_drivers} --stat "$root" HEAD > {_DIFFSTAT}
{g} bundle create -q {_BUNDLE} --all
echo "BUNDLE_BYTES: $(stat -c %s {_BUNDLE})"
echo "COMMITS: $({g} rev-list --count --all)"
"""


def _field(stdout: str, name: str) -> int | None:
    prefix = f"{name}: "
    for line in stdout.splitlines():
        if line.startswith(prefix) and line[len(prefix) :].strip().isdigit():
            return int(line[len(prefix) :])
    return None


async def capture_history(
    workspace: Path, workdir: str, timeout: float = HISTORY_TIMEOUT_S
) -> dict[str, Any]:
    """git log, diff summary and (if small enough) a bundle of the finished workspace.
    A capture that takes over `timeout` (the scorer gives it what is left of the scoring
    budget) gives no history, never an error."""
    owner_is_agent = workspace.stat().st_uid == 1000
    async with grader_session(
        protected=None,
        workspace=workspace,
        workspace_target=workdir,
        workspace_writable=False,  # the history goes to a repository of labcoat's own
        memory_mb=2048,
    ) as session:
        user = "agent" if owner_is_agent or "root" not in session.users else "root"
        try:
            result = await session.exec(
                ["bash", "-c", _capture_script(workdir)], cwd="/tmp", user=user, timeout=timeout
            )
        except TimeoutError:
            return {"captured": False, "note": f"no history: the capture took over {timeout:.0f} s"}
        if not result.success:
            return {"captured": False, "error": (result.stderr or result.stdout)[-2000:]}
        log = str(await session.read_file(_LOG))
        diff_stat = str(await session.read_file(_DIFFSTAT))
        size = _field(result.stdout, "BUNDLE_BYTES")
        small = size is not None and size <= MAX_BUNDLE_BYTES
        bundle = await session.read_file(_BUNDLE, text=False) if small else b""
    assert isinstance(bundle, bytes)
    notes = [line[6:] for line in result.stdout.splitlines() if line.startswith("NOTE: ")]
    return {
        "captured": True,
        "commits": _field(result.stdout, "COMMITS"),
        "log": log[:MAX_TEXT] + ("\n[... truncated]" if len(log) > MAX_TEXT else ""),
        "diff_stat": diff_stat[-MAX_TEXT:],
        "bundle_bytes": size,
        "bundle_base64": base64.b64encode(bundle).decode() if small else None,
        "note": "; ".join(notes)
        or (None if small else f"bundle over {MAX_BUNDLE_BYTES} bytes: log and diff only"),
    }

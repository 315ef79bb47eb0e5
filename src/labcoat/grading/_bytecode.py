"""No bytecode in a workspace that is graded: the grader runs the source that is kept.

Python runs a `__pycache__/<name>.cpython-*.pyc` instead of its `.py` whenever the
`.pyc`'s stamp (the source's mtime and size) matches, and a `name.pyc` with no source at
all; an agent can stamp bytecode of other code beside an innocent source. The keep never
saves bytecode (Python rebuilds it), so the grader must not see it either: once the
agent has stopped, before the workspace is kept and graded, every `__pycache__` folder
and `*.pyc` file in it is removed (in the agent's own sandbox, as its root where there is
one). Every family's scorer gets this through `keep_workspace`.

Removal that fails or runs out of time leaves the score as it is, with an integrity
flag: a grader may then have run bytecode that the kept workspace does not hold.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from inspect_ai.util import sandbox

from labcoat.sandbox import current_bwrap_session

BYTECODE = ("__pycache__", "*.pyc")
"""What is removed: names anywhere in the workspace (as the keep's exclusions match)."""
PRUNED = (".venv",)
"""Not searched: a task's environment, rebuilt by its setup and never kept (removing its
bytecode would make every import of a read-only grading compile it again)."""
TIMEOUT_S = 60.0
SHOWN = 20

_MATCH = " -o ".join(f"-name {shlex.quote(p)}" for p in BYTECODE)
_PRUNE = " -o ".join(f"-name {shlex.quote(p)}" for p in PRUNED)
_FIND = f"find . \\( -type d \\( {_PRUNE} \\) -prune \\) -o \\( {_MATCH} \\) -prune -print"
# rm first; where that fails (one user: a folder the agent made read-only), make the
# parent and the tree writable for the owner and try again
_REMOVE = (
    'for f; do rm -rf -- "$f" 2>/dev/null && continue; chmod u+wx -- "${f%/*}"; '
    '[ -L "$f" ] || chmod -R u+rwx -- "$f"; rm -rf -- "$f"; done'
)
SCRIPT = f"""set -u
cd -- "$1" 2>/dev/null || {{ echo "REMOVED 0"; exit 0; }}
n=$({_FIND} | wc -l)
if [ "$n" -gt 0 ]; then
  {_FIND.removesuffix(" -print")} -exec sh -c {shlex.quote(_REMOVE)} sh {{}} + 2>/dev/null
fi
echo "REMOVED $n"
{_FIND} | head -n {SHOWN} | sed 's/^/LEFT /'
"""


async def remove_bytecode(path: str, timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """Remove `__pycache__` and `*.pyc` under `path` of the agent's (stopped) sandbox:
    `{"removed": n}`, with `"left": [paths]` or `"error"` when some may remain."""
    session = current_bwrap_session()
    user = "root" if session is None or "root" in session.users else None
    try:
        result = await sandbox().exec(
            ["sh", "-c", SCRIPT, "sh", path], user=user, timeout=max(1, math.ceil(timeout))
        )
    except TimeoutError:
        return {"removed": None, "error": f"timed out after {timeout:.0f} s"}
    except Exception as ex:  # e.g. a provider without a root user
        return {"removed": None, "error": f"{type(ex).__name__}: {ex}"[:300]}
    lines = result.stdout.splitlines()
    removed = next((int(x.split()[1]) for x in lines if x.startswith("REMOVED ")), None)
    left = [x.removeprefix("LEFT ") for x in lines if x.startswith("LEFT ")]
    outcome: dict[str, Any] = {"removed": removed}
    if left:
        outcome["left"] = left
    elif removed is None or not result.success:
        outcome["error"] = (result.stderr or result.stdout).strip()[-300:] or "no result"
    return outcome


def bytecode_flags(outcome: dict[str, Any]) -> list[str]:
    """An integrity flag when bytecode may have stayed in the graded workspace."""
    if outcome.get("left"):
        shown = ", ".join(outcome["left"][:3])
        return [
            f"bytecode could not be removed before grading ({shown}): the grader may "
            "have run code the kept workspace does not hold"
        ]
    if outcome.get("error"):
        return [
            f"the workspace could not be searched for bytecode before grading "
            f"({outcome['error']}): the grader may have run code it does not hold"
        ]
    return []

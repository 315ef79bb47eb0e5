"""The sandbox labcoat would start here, started: the probe of tests/containers'
least-privilege measurement, run inside a container as root or an ordinary user.

Prints one JSON line: the isolation mode labcoat chose, why namespaces are refused (if
they are), and whether a real sample sandbox (`BwrapSession`, the default `BwrapConfig`:
no network, limits, disk quota, overlays) started and ran a command as the agent — and
as its root, where the mode has one — with the mechanisms of its limits and disk quota.
The first line of any error is kept: it is what the table shows for a refusal.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio

# a failed start's sandbox.log is the measurement's reason: keep the folder to read it
# (the container, started with --rm, goes with it)
os.environ["LABCOAT_KEEP_SANDBOXES"] = "1"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    log = re.search(r"see (\S+/sandbox\.log)", text)
    if log and Path(log[1]).is_file():
        # what bwrap or labcoat's mount helper said, not the pointer to it
        said = [line for line in Path(log[1]).read_text().splitlines() if line.strip()]
        if said:
            return said[-1].strip()[:300]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # bwrap's own complaint is the most telling line of a failed start
    for line in lines:
        if line.startswith("bwrap:"):
            return line
    return lines[0][:300]


async def probe() -> dict[str, object]:
    from labcoat.sandbox import BwrapConfig, BwrapSession
    from labcoat.sandbox._guarantees import namespaces_refused
    from labcoat.sandbox._layout import isolation
    from labcoat.sandbox._userns import mapping_problem

    found: dict[str, object] = {"euid": os.geteuid(), "ok": False}
    try:
        found["mode"] = str(isolation())
        found["refused"] = namespaces_refused()
        # why an ordinary user gets no separate users (None: the range maps)
        found["mapping"] = mapping_problem() if os.geteuid() != 0 else None
    except Exception as exc:  # the probe reports every failure, never raises
        found["error"] = first_line(exc)
        return found
    session = None
    try:
        with anyio.fail_after(120):
            session = await BwrapSession.create(BwrapConfig())
            agent = await session.exec(["id", "-u"])
            found["agent_uid"] = agent.stdout.strip() if agent.success else None
            if session.privileged:
                root = await session.exec(["id", "-u"], user="root")
                found["root_uid"] = root.stdout.strip() if root.success else None
            found["limits"] = session.limit_mechanism
            found["disk"] = session.disk_mechanism
            expected_root = "0" if session.privileged else None
            found["ok"] = found["agent_uid"] == "1000" and found.get("root_uid") == expected_root
            if not found["ok"]:
                found["error"] = f"commands ran as {agent.stdout.strip()!r}: {agent.stderr[:200]}"
    except Exception as exc:  # a refusal is the measurement
        found["error"] = first_line(exc)
    finally:
        if session is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await session.close()
                except Exception as exc:
                    found.setdefault("error", f"close: {first_line(exc)}")
    return found


def main() -> None:
    print(json.dumps(anyio.run(probe)), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()

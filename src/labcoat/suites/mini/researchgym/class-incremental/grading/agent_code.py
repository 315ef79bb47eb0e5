"""Running the agent's code from a grader, as the agent user (shared by labcoat's
bundled graders; each task folder carries its own copy so it stands alone).

Inside labcoat's grading sandbox the grader is root: agent code runs as uid 1000, which
cannot read /root (held-out data, the grader) nor the workspace mounted under it. Run by
hand anywhere else, agent code runs as the caller.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

AGENT_UID = 1000


class AgentCodeError(Exception):
    pass


def privileged() -> bool:
    return os.geteuid() == 0 and os.environ.get("LABCOAT_GRADER_SANDBOX") == "1"


def jail(writable: tuple[Path, ...]) -> list[str]:
    """The command prefix of labcoat's nested sandbox for the agent's code, in a grader
    sandbox with one user (LABCOAT_AS_AGENT): the agent's code then has a pid namespace
    of its own, no /root, and only `writable` to write. Empty elsewhere."""
    prefix = os.environ.get("LABCOAT_AS_AGENT", "").split()
    if not prefix or privileged():
        return []
    for path in writable:
        prefix += ["--writable", str(path)]
    return [*prefix, "--"]


def give_to_agent(path: Path) -> None:
    if privileged():
        os.chown(path, AGENT_UID, AGENT_UID)


def copy_readable(source: Path, target: Path) -> None:
    """Copy the agent's folder for running it: links stay links (copied as root, a
    followed link could bring in held-out data), and the agent user can read the copy."""
    shutil.copytree(source, target, symlinks=True)
    for path in [target, *target.rglob("*")]:
        if not path.is_symlink():  # chmod would follow it
            path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))


def agent_processes() -> set[int]:
    pids = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
            uid = next(line for line in lines if line.startswith("Uid:"))
            if int(uid.split()[1]) == AGENT_UID:
                pids.add(int(status.parent.name))
        except (OSError, StopIteration, ValueError):
            continue
    return pids


# the sandbox's own agent-user processes (its exec server), there before any agent code
_SANDBOX_PROCESSES = agent_processes() if os.geteuid() == 0 else set()


def kill_leftovers() -> None:
    """Nothing agent code started may outlive it (a daemon could keep data around), nor
    its System V shared memory, message queues or semaphores (they outlive processes)."""
    if privileged():
        for pid in agent_processes() - _SANDBOX_PROCESSES:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        clear_ipc()


def clear_ipc() -> None:
    """Remove the agent user's System V IPC objects of this sandbox (its own namespace)."""
    flags = {"shm": "-m", "msg": "-q", "sem": "-s"}
    for kind, flag in flags.items():
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        header = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[0].split()
        for line in lines:
            fields = dict(zip(header, line.split(), strict=False))
            if fields.get("uid") == str(AGENT_UID) and shutil.which("ipcrm"):
                subprocess.run(["ipcrm", flag, fields.get("shmid") or fields.get("msqid")
                                or fields.get("semid", "")], capture_output=True, check=False)


def run(code: str, args: list[str], *, home: Path, log: Path, timeout: float,
        writable: tuple[Path, ...] = ()) -> None:
    """Run `python -c code args...` as the agent user in `home`; raise on failure. Where
    labcoat's grader sandbox has one user, it runs in a sandbox nested in it instead
    (`jail`), which can write only `home` and `writable`.

    Output goes to a file, not a pipe: a process left behind holding a pipe would keep
    us waiting past the program's own end.
    """
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "TMPDIR": str(home), "LANG": "C.UTF-8"}
    for name in ("PYTHONPATH", "LD_LIBRARY_PATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    drop = {"user": AGENT_UID, "group": AGENT_UID, "extra_groups": []} if privileged() else {}
    with open(log, "w") as output:
        try:
            result = subprocess.run([*jail((home, *writable)), sys.executable, "-c", code, *args], cwd=home, env=env,
                                    stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                                    timeout=timeout, **drop)
        except subprocess.TimeoutExpired:
            raise AgentCodeError(f"timed out after {timeout:g} s") from None
        finally:
            kill_leftovers()
    if result.returncode != 0:
        tail = log.read_text(errors="replace").strip()[-1500:]
        raise AgentCodeError(f"exit {result.returncode}: {tail}")


PSEUDO_FILE_SYSTEMS = ("proc", "sysfs", "cgroup", "cgroup2", "devpts")


def writable_roots() -> list[Path]:
    """Every mount of this sandbox that is writable (but the kernel's views), and the
    folders the agent user may write as a rule: with no exceptions."""
    roots = []
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        mounts = []
    for line in mounts:
        fields = line.split()
        point, options = fields[4], fields[5].split(",")
        fstype = fields[fields.index("-") + 1] if "-" in fields else ""
        if "rw" in options and fstype not in PSEUDO_FILE_SYSTEMS:
            roots.append(Path(point.replace("\\040", " ")))
    known = [Path(p) for p in ("/tmp", "/var/tmp", "/home/agent", "/dev/shm", "/dev/mqueue")]
    return sorted({*roots, *(p for p in known if p.is_dir())})


def scrub() -> None:
    """Remove every file, folder, link, socket or queue the agent user owns wherever this
    sandbox is writable, so that nothing one run of its code leaves reaches the next.
    With one user nothing here can tell the agent's files from the grader's: there the
    agent's code runs nested (`jail`), where it writes only what the grader hands it, and
    the grader makes those afresh for every run."""
    if not privileged():
        return
    for root in writable_roots():
        for dirpath, dirnames, filenames in os.walk(root, topdown=True):
            base = Path(dirpath)
            for name in list(dirnames) + filenames:
                path = base / name
                if name in dirnames and os.path.ismount(path):
                    dirnames.remove(name)  # another mount: walked on its own if writable
                    continue
                try:
                    owned = path.lstat().st_uid == AGENT_UID
                    if owned and path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path, ignore_errors=True)
                        dirnames.remove(name)
                    elif owned:
                        path.unlink(missing_ok=True)
                except OSError:
                    continue


def load_array(path: Path) -> np.ndarray:
    """An array the agent user wrote: no links (root would follow them), no pickles."""
    if path.is_symlink() or not path.is_file():
        raise AgentCodeError(f"no readable {path.name}: not a regular file")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as ex:
        raise AgentCodeError(f"no readable {path.name}: {ex}") from None

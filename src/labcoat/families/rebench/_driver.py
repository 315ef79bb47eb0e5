"""Runs one METR task-standard operation inside a sandbox (standard library only).

Usage: python -c <this file> OPERATION FAMILY [TASK] [--submission-file F] [--score-log-file F]

The family's folder is the working directory (/root). Whatever the family prints is kept;
the result follows as one JSON document between two SEPARATOR lines at the very end.
Exit codes: 0 the operation ran; 1 the family's code raised (a traceback follows); 3 the
family could not be loaded (no module, no TaskFamily, no such task) - stderr's last line
starts with LOAD_FAILED_MARK (a family's own code may exit with any code, 3 included).

The operations follow the METR task standard's reference runners: `get_instructions`,
`get_permissions`, `start`, `teardown` and `install` are optional; after `start`,
/home/agent is given to the agent except files of the `protected` group and hidden
top-level folders (other than .ssh), unless `TaskFamily.skip_chown_after_start`; the final
score is `aggregate_scores(task, score_log)` when defined, else `score(task, submission)`.
`tasks` (labcoat's own) gives get_tasks()'s names and the tasks that ask for an aux VM,
for listing, which runs it in the family's environment without its image.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import sys
import traceback
from typing import Any

SEPARATOR = "=====LABCOAT-RESULT-7f3a9c====="
LOAD_FAILED = 3
LOAD_FAILED_MARK = "labcoat-driver: cannot load the family: "
AGENT_HOME = pathlib.Path("/home/agent")


class LoadError(Exception):
    """The family (or the task) cannot be loaded: a problem of the task's files."""


def _jsonable(value: Any) -> Any:
    """Plain JSON values; numpy scalars and arrays as lists/numbers, anything else as repr.
    NaN and infinities stay (Python's json reads them back): NaN means an invalid score."""
    if isinstance(value, bool) or value is None or isinstance(value, int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy scalars, arrays; pandas series
    if callable(tolist):
        try:
            return _jsonable(tolist())
        except Exception:
            pass
    to_dict = getattr(value, "to_dict", None)  # pandas data frames
    if callable(to_dict):
        try:
            return _jsonable(to_dict(orient="records"))
        except Exception:
            pass
    return repr(value)


def _load(name: str) -> Any:
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(name)
    except ImportError as ex:
        raise LoadError(f"cannot import {name}.py: {type(ex).__name__}: {ex}") from ex
    family = getattr(module, "TaskFamily", None)
    if family is None:
        raise LoadError(f"{name}.py defines no TaskFamily class")
    return family


def _task(family: Any, name: str) -> Any:
    tasks = family.get_tasks()
    if name not in tasks:
        raise LoadError(f"no task {name!r} (get_tasks() has: {', '.join(map(str, tasks))})")
    return tasks[name]


def _setup(family: Any) -> dict[str, Any]:
    tasks = family.get_tasks()
    get_instructions = getattr(family, "get_instructions", None)
    get_permissions = getattr(family, "get_permissions", None)
    get_aux_vm_spec = getattr(family, "get_aux_vm_spec", None)
    return {
        "tasks": {
            str(name): {
                "instructions": get_instructions(task) if get_instructions else "",
                "permissions": list(get_permissions(task)) if get_permissions else [],
                "aux_vm": bool(get_aux_vm_spec and get_aux_vm_spec(task) is not None),
            }
            for name, task in tasks.items()
        },
        "standard_version": getattr(family, "standard_version", None),
        "required_environment_variables": list(
            getattr(family, "required_environment_variables", [])
        ),
        "intermediate_scoring": hasattr(family, "intermediate_score"),
        "has_score": hasattr(family, "score"),
        "has_aggregate": hasattr(family, "aggregate_scores"),
        "has_teardown": hasattr(family, "teardown"),
    }


def _task_names(family: Any) -> dict[str, Any]:
    """get_tasks()'s names and those whose get_aux_vm_spec() is a spec: what listing and
    `labcoat check` need, without instructions or permissions."""
    tasks = family.get_tasks()
    get_aux_vm_spec = getattr(family, "get_aux_vm_spec", None)
    return {
        "tasks": [str(name) for name in tasks],
        "aux_vm": [
            str(name)
            for name, task in tasks.items()
            if get_aux_vm_spec is not None and get_aux_vm_spec(task) is not None
        ],
        "required_environment_variables": list(
            getattr(family, "required_environment_variables", [])
        ),
    }


def _should_chown(path: pathlib.Path) -> bool:
    """What the reference runners give the agent after start()."""
    try:
        if path.group() == "protected":
            return False
    except KeyError:  # a group without a name
        pass
    if path.parent == AGENT_HOME and path.is_file():
        return True
    top = path.relative_to(AGENT_HOME).parts[0]
    return not top.startswith(".") or top == ".ssh"


def _give_home_to_agent() -> None:
    if os.geteuid() != 0 or not AGENT_HOME.is_dir():
        return  # one user only: everything already belongs to it
    import pwd

    agent = pwd.getpwnam("agent")
    for path in AGENT_HOME.rglob("*"):
        if not path.is_symlink() and _should_chown(path):
            os.chown(path, agent.pw_uid, agent.pw_gid)
    os.chown(AGENT_HOME, agent.pw_uid, agent.pw_gid)


def _run(args: argparse.Namespace) -> Any:
    family = _load(args.family)
    operation = args.operation
    if operation == "setup":
        return _setup(family)
    if operation == "tasks":
        return _task_names(family)
    if operation == "install":
        if hasattr(family, "install"):
            family.install()
        return None
    if operation == "teardown":
        if hasattr(family, "teardown"):
            family.teardown()
            return "torn down"
        return None
    if not args.task:
        raise LoadError(f"{operation} needs a task name")
    task = _task(family, args.task)
    if operation == "start":
        if hasattr(family, "start"):
            family.start(task)
        if not getattr(family, "skip_chown_after_start", False):
            _give_home_to_agent()
        return None
    if operation == "intermediate_score":
        return family.intermediate_score(task) if hasattr(family, "intermediate_score") else None
    # score: aggregate the intermediate scores when the family can, else score the submission
    if hasattr(family, "aggregate_scores"):
        text = pathlib.Path(args.score_log_file).read_text() if args.score_log_file else "[]"
        return family.aggregate_scores(task, json.loads(text or "[]"))
    if hasattr(family, "score"):
        submission = pathlib.Path(args.submission_file).read_text() if args.submission_file else ""
        return family.score(task, submission)
    return None


def _chown_in_one_user_sandbox() -> None:
    """Without root (labcoat run by another user) the sandbox maps a single user, so root
    and the protected group do not exist there and chown to them fails (EINVAL). A
    family's protect steps (METR's `protect_path`) then do what one user can: the file
    and its mode, without the owner change, which could not keep the agent out anyway."""
    if os.getuid() == 0:
        return
    import errno

    def tolerant(real: Any) -> Any:
        def chown(*args: Any, **kwargs: Any) -> None:
            try:
                real(*args, **kwargs)
            except OSError as ex:
                if ex.errno != errno.EINVAL:
                    raise

        return chown

    os.chown, os.lchown, os.fchown = (tolerant(f) for f in (os.chown, os.lchown, os.fchown))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "operation",
        choices=["setup", "tasks", "install", "start", "intermediate_score", "score", "teardown"],
    )
    parser.add_argument("family")
    parser.add_argument("task", nargs="?")
    parser.add_argument("--submission-file")
    parser.add_argument("--score-log-file")
    args = parser.parse_args()
    _chown_in_one_user_sandbox()
    try:
        result = _run(args)
    except LoadError as ex:
        print(f"{LOAD_FAILED_MARK}{ex}", file=sys.stderr, flush=True)
        sys.exit(LOAD_FAILED)
    except Exception:
        traceback.print_exc()
        sys.stderr.flush()
        sys.exit(1)
    sys.stdout.flush()
    encoded = json.dumps(_jsonable(result), allow_nan=True)
    print(f"\n{SEPARATOR}\n{encoded}\n{SEPARATOR}", flush=True)


if __name__ == "__main__":
    main()

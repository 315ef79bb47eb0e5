"""The parameters of a family's Inspect task, checked before anything runs.

Both entry points use this: `labcoat eval -T KEY=VALUE` checks the pairs up front
(`check_task_args`), and every family's `@task` function is wrapped by `task_parameters`,
so `inspect eval labcoat/<family> -T ...` gets the same checks. A wrong parameter is one
line naming it and what is wrong; under Inspect it is a `PrerequisiteError`, which
Inspect prints as that line, without a traceback.
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from inspect_ai._util.error import PrerequisiteError
from pydantic import ConfigDict, TypeAdapter, ValidationError

from labcoat._errors import LabcoatError

F = TypeVar("F", bound=Callable[..., Any])

# set by `labcoat eval` from its own options, never with -T
COMMON = ("target", "tasks", "agent", "sandbox")
OWN_OPTIONS = {"agent": "--agent", "sandbox": "--sandbox", "tasks": "--task", "target": "TARGET"}


class TaskInputError(LabcoatError, PrerequisiteError):
    """A task function called with arguments it does not take, or with values its task
    data cannot meet (PaperBench: an unknown judge, a broken paper): one line under both
    `labcoat` and `inspect` (Inspect's CLI prints a PrerequisiteError without a traceback)."""

    def __init__(self, message: str) -> None:
        LabcoatError.__init__(self, message)
        self.message = message


# one subclass per error class (a cache keyed by class: typeshed calls a class unhashable)
_PREREQUISITE_CLASSES: dict[type[LabcoatError], type[LabcoatError]] = {}


def _with_prerequisite(cls: type[LabcoatError]) -> type[LabcoatError]:
    if cls not in _PREREQUISITE_CLASSES:
        _PREREQUISITE_CLASSES[cls] = type(
            cls.__name__, (cls, PrerequisiteError), {"__module__": cls.__module__}
        )
    return _PREREQUISITE_CLASSES[cls]


def visible_to_inspect(ex: LabcoatError) -> LabcoatError:
    """The same error, also a PrerequisiteError: Inspect's CLI prints its message as one
    line instead of a traceback, and callers catching its own class still catch it."""
    if not isinstance(ex, PrerequisiteError):
        ex.__class__ = _with_prerequisite(type(ex))
        ex.message = str(ex)  # type: ignore[attr-defined]
    return ex


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if not typing.get_args(annotation) else None
    return text or str(annotation).replace("typing.", "")


def _adapter(annotation: Any) -> TypeAdapter[Any]:
    # a YAML -T value like `tasks=2024` is a number; where a string is wanted, it is one
    return TypeAdapter(annotation, config=ConfigDict(coerce_numbers_to_str=True))


def parameters(fn: Callable[..., Any]) -> dict[str, Any]:
    """name -> annotation of a task function's parameters."""
    target = inspect.unwrap(fn)
    hints = typing.get_type_hints(target)
    return {name: hints.get(name, Any) for name in inspect.signature(target).parameters}


def convert(fn: Callable[..., Any], key: str, value: Any) -> Any:
    """`value` as the type `key` is annotated with; a mismatch is one line."""
    annotation = parameters(fn)[key]
    try:
        converted = _adapter(annotation).validate_python(value)
    except ValidationError as ex:
        message = ex.errors()[0]["msg"]
        raise LabcoatError(
            f"-T {key}={value!r}: {message[0].lower()}{message[1:]} "
            f"(expected {_type_name(annotation)})"
        ) from None
    if isinstance(converted, float) and not math.isfinite(converted):
        raise LabcoatError(f"-T {key}={value!r}: expected a finite number")
    return converted


def check_task_args(fn: Callable[..., Any], family: str, args: dict[str, Any]) -> dict[str, Any]:
    """`labcoat eval -T` pairs for `family`: known keys, values of the right type."""
    known = parameters(fn)
    own = [k for k in known if k not in COMMON]
    out = {}
    for key, value in args.items():
        if key in OWN_OPTIONS:
            raise LabcoatError(f"-T {key}: set it with {OWN_OPTIONS[key]}, not -T")
        if key not in known:
            raise LabcoatError(
                f"-T {key}: not a parameter of the {family} task "
                f"(its parameters: {', '.join(own) or 'none'})"
            )
        out[key] = convert(fn, key, value)
    return out


def check_choice(key: str, value: Any, choices: Iterable[str]) -> None:
    options = list(choices)
    if value not in options:
        raise LabcoatError(f"-T {key}={value!r}: choose from {', '.join(options)}")


def check_positive(key: str, value: Any) -> None:
    if value is not None and value <= 0:
        raise LabcoatError(f"-T {key}={value!r}: must be greater than 0")


def check_common(agent: str, sandbox: str, tasks: Any) -> None:
    from labcoat.agents import check_agent_name
    from labcoat.families._sandbox import SANDBOX_KINDS

    check_agent_name(agent)
    check_choice("sandbox", sandbox, SANDBOX_KINDS)
    ids = [tasks] if isinstance(tasks, str) else (tasks or [])
    if any(not str(i).strip() for i in ids):
        raise LabcoatError("-T tasks: an empty task id")


def task_parameters(
    *,
    choices: dict[str, Iterable[str]] | None = None,
    positive: Iterable[str] = (),
    non_negative: Iterable[str] = (),
) -> Callable[[F], F]:
    """Wrap a family's @task function: every parameter is converted to its annotated type
    and checked (`choices`, `positive`, `non_negative`, the agent and sandbox names)
    before the family's own code runs; any LabcoatError while building the task becomes
    a `TaskInputError`, one line under Inspect's CLI as under labcoat's."""
    positive = tuple(positive)
    non_negative = tuple(non_negative)

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as ex:  # an unknown keyword, from Python code calling the task
                raise TaskInputError(f"{fn.__name__}: {ex}") from None
            try:
                values = {k: convert(fn, k, v) for k, v in bound.arguments.items()}
                check_common(
                    values.get("agent", signature.parameters["agent"].default),
                    values.get("sandbox", signature.parameters["sandbox"].default),
                    values.get("tasks"),
                )
                for key, options in (choices or {}).items():
                    if key in values:
                        check_choice(key, values[key], options)
                for key in positive:
                    check_positive(key, values.get(key))
                for key in non_negative:
                    if values.get(key) is not None and values[key] < 0:
                        raise LabcoatError(f"-T {key}={values[key]!r}: must be 0 or more")
                return fn(**values)
            except LabcoatError as ex:
                raise visible_to_inspect(ex) from None

        return wrapper  # type: ignore[return-value]

    return decorate

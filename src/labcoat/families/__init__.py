"""Benchmark families: native-format loaders, Inspect tasks and graders."""

from labcoat.families._entry import TaskEntry, ValidationThresholds
from labcoat.families._registry import (
    broken_entry,
    discover,
    eval_task_args,
    family_grader_version,
    family_module,
    family_names,
    family_spec,
    is_family,
    register_family,
    select,
    task_function,
)
from labcoat.families._spec import EvalChoices, FamilyProvenance, FamilySpec

__all__ = [
    "EvalChoices",
    "FamilyProvenance",
    "FamilySpec",
    "TaskEntry",
    "ValidationThresholds",
    "broken_entry",
    "discover",
    "eval_task_args",
    "family_grader_version",
    "family_module",
    "family_names",
    "family_spec",
    "is_family",
    "register_family",
    "select",
    "task_function",
]

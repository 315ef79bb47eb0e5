"""Benchmark families: native-format loaders, Inspect tasks and graders."""

from labcoat.families._entry import TaskEntry, ValidationThresholds
from labcoat.families._registry import (
    broken_entry,
    discover,
    family_module,
    family_names,
    select,
    task_function,
)

__all__ = [
    "TaskEntry",
    "ValidationThresholds",
    "broken_entry",
    "discover",
    "family_module",
    "family_names",
    "select",
    "task_function",
]

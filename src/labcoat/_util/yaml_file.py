"""Reading YAML task files with errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from labcoat._errors import TaskDataError
from labcoat._util.text_file import read_text

ModelT = TypeVar("ModelT", bound=BaseModel)


def read_yaml(path: Path) -> Any:
    """The YAML document in `path`; any problem is one TaskDataError line."""
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as ex:
        raise yaml_error(path, ex) from None


def yaml_error(path: Path, ex: yaml.YAMLError) -> TaskDataError:
    """One line for a YAML syntax error: where it is and what is wrong."""
    mark = getattr(ex, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
    problem = " ".join(str(getattr(ex, "problem", None) or ex).split())
    return TaskDataError(path, where, f"not valid YAML: {problem}")


def field_path(location: tuple[int | str, ...]) -> str:
    """`tasks.main.score.start` style path for a pydantic error location."""
    out = ""
    for part in location:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate_model(model: type[ModelT], data: Any, path: Path, prefix: str = "") -> ModelT:
    """Validate `data`; the first error becomes a TaskDataError naming file and field."""
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as ex:
        error = ex.errors()[0]
        field = field_path(tuple(error["loc"]))
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        raise TaskDataError(path, field or None, error["msg"]) from None


def load_model(model: type[ModelT], path: Path) -> ModelT:
    return validate_model(model, read_yaml(path), path)

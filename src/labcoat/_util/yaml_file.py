"""Reading YAML task files with errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from labcoat._errors import TaskDataError
from labcoat._util.limits import MAX_NESTING, MAX_YAML_BYTES, check_nesting
from labcoat._util.text_file import read_text

ModelT = TypeVar("ModelT", bound=BaseModel)


class _Loader(yaml.SafeLoader):
    """yaml.safe_load's loader, refusing a key repeated in one mapping (PyYAML keeps the
    last, so `id: a` then `id: b` would silently rename a paper)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        problem=f"duplicate key {key!r} "
                        f"(also on line {seen[key].start_mark.line + 1})",
                        problem_mark=key_node.start_mark,
                    )
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str, path: Path) -> Any:
    """The YAML document `text` read from `path`; any problem is one TaskDataError line:
    bad syntax, a repeated key, nesting deeper than MAX_NESTING, aliases that expand to
    too much."""
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.YAMLError as ex:
        raise yaml_error(path, ex) from None
    except RecursionError:
        raise TaskDataError(path, None, f"nested more than {MAX_NESTING} levels deep") from None
    check_nesting(data, path)
    return data


def read_yaml(path: Path) -> Any:
    """The YAML document in `path`; any problem is one TaskDataError line."""
    return parse_yaml(read_text(path, MAX_YAML_BYTES), path)


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

"""The sources merged into one document and validated; a problem named by its source and key."""

from __future__ import annotations

from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from nestor.config.files import Layer
from nestor.config.sections import ConfigDocument
from nestor.core.errors import ConfigError


def validate(layers: list[Layer]) -> ConfigDocument:
    """The layers merged, lowest precedence first, and validated; a problem raises a ConfigError."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = merge(merged, layer.data, ())
    try:
        return ConfigDocument.model_validate(merged)
    except ValidationError as exc:
        raise _config_error(exc.errors(include_url=False), layers) from None


def merge(base: dict[str, Any], top: dict[str, Any], path: tuple[str, ...] = ()) -> dict[str, Any]:
    """Deep-merge ``top`` over ``base`` (see :mod:`nestor.config` for models and permissions)."""
    result = dict(base)
    for key, value in top.items():
        old = result.get(key)
        if path == ("models",) and isinstance(old, str) and isinstance(value, dict):
            old = {"model": old}
        if isinstance(old, dict) and isinstance(value, dict):
            result[key] = merge(old, value, (*path, key))  # pyright: ignore[reportUnknownArgumentType]
        elif path in (("permissions",), ("hooks",)) and isinstance(old, list) and isinstance(value, list):
            result[key] = old + [rule for rule in value if rule not in old]  # pyright: ignore[reportUnknownVariableType]
        else:
            result[key] = value
    return result


def _config_error(errors: list[ErrorDetails], layers: list[Layer]) -> ConfigError:
    """Turn the first validation error into a one-line message naming its source and key."""
    error = errors[0]
    loc = tuple(str(part) for part in error["loc"])
    keys, schema = _schema_keys(loc)
    layer = _layer_for(keys, layers)
    extra = len(errors) - 1
    more = f" ({extra} more problem{'s' if extra > 1 else ''} after this one)" if extra else ""
    dotted = ".".join(keys)
    where = str(layer.path) if layer and layer.path else (layer.label if layer else "configuration")
    if error["type"] == "extra_forbidden" and schema is not None:
        section = f"[{'.'.join(keys[:-1])}]" if len(keys) > 1 else "the top level"
        known = ", ".join(sorted(schema.model_fields))
        return ConfigError(f"{where}: unknown key '{dotted}'{more}", hint=f"known keys in {section}: {known}")
    cause = _cause(error)
    if layer is not None and layer.path is None:
        what = (
            f"flag {layer.label}" if layer.label.startswith("--") else f"environment variable {layer.label}"
        )
        return ConfigError(f"{what}: {cause}{more}", hint=f"fix the value of {what}")
    return ConfigError(f"{where}: {dotted}: {cause}{more}", hint=f"fix '{dotted}' in {where}")


def _cause(error: ErrorDetails) -> str:
    if error["type"] == "missing":
        return "this key is required"
    if error["type"] == "value_error":
        return error["msg"].removeprefix("Value error, ")
    cause = error["msg"][:1].lower() + error["msg"][1:]
    value = error.get("input")
    if isinstance(value, str | int | float | bool):
        cause += f", got {value!r}"
    return cause


def _schema_keys(loc: tuple[str, ...]) -> tuple[tuple[str, ...], type[BaseModel] | None]:
    """Keep the parts of a pydantic error location that are config keys.

    Drops union-member tags and list indexes. Returns the keys and the model whose fields the
    last key was looked up in (for listing known keys), if any.
    """
    keys: list[str] = []
    current: type[BaseModel] | None = ConfigDocument
    in_dict: type[BaseModel] | None = None
    parent: type[BaseModel] | None = None
    for part in loc:
        if in_dict is not None:
            keys.append(part)
            parent, current, in_dict = None, in_dict, None
        elif current is not None:
            keys.append(part)
            parent = current
            field = current.model_fields.get(part)
            if field is None:
                break
            current, in_dict = _model_in(field.annotation), _dict_value_model(field.annotation)
            if in_dict is not None:
                current = None
        else:
            break
    return tuple(keys), parent


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, UnionType):
        return next((found for arg in get_args(annotation) if (found := _model_in(arg))), None)
    return None


def _dict_value_model(annotation: object) -> type[BaseModel] | None:
    return _model_in(get_args(annotation)[1]) if get_origin(annotation) is dict else None


def _layer_for(keys: tuple[str, ...], layers: list[Layer]) -> Layer | None:
    """The highest-precedence layer that set the deepest part of ``keys``."""
    best: Layer | None = None
    best_depth = 0
    for layer in layers:
        depth, node = 0, layer.data
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                break
            depth, node = depth + 1, node[key]  # pyright: ignore[reportUnknownVariableType]
        if depth >= best_depth and depth > 0:
            best, best_depth = layer, depth
    return best

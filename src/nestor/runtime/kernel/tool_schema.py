"""What the model is told about an agent's tools: their definitions, full or brief."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.tools import ToolDefinition

from nestor.tools.base import Tool


def tool_definitions(tools: Sequence[Tool[Any]], *, brief: bool) -> list[ToolDefinition]:
    """The definitions sent with each request.

    ``brief`` is for small models: one-line descriptions, required parameters only, no schema
    titles (every prompt token costs them time). Either way the schema's own description (the
    parameters model's docstring, "Arguments of the ``view`` tool.") is left out: the tool's
    description says it better, and every request of every agent carries it.
    """
    return [
        ToolDefinition(
            name=tool.name,
            description=tool.brief_description if brief else tool.description,
            parameters_json_schema=brief_schema(tool.parameters_schema(), tool.brief_parameters)
            if brief
            else _without_description(tool.parameters_schema()),
        )
        for tool in tools
    ]


def _without_description(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its top-level ``description`` (its properties keep theirs)."""
    return {key: value for key, value in schema.items() if key != "description"}


def brief_schema(schema: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """A tool's parameter schema for a small model: required parameters (and ``optional``), no titles.

    Small models fill optional parameters with invented values (a ``path`` that does not exist);
    the tools' defaults serve them better.
    """
    kept = {key: value for key, value in schema.items() if key not in ("title", "description")}
    required = set(kept.get("required", ())) | set(optional)
    properties = kept.get("properties")
    if isinstance(properties, dict):
        kept["properties"] = {name: value for name, value in properties.items() if name in required}  # pyright: ignore[reportUnknownVariableType]
    return _without_titles(kept)


def _without_titles(schema: Any) -> Any:
    """A JSON schema without pydantic's ``title`` keys (they repeat the property names)."""
    if isinstance(schema, dict):
        return {
            key: _without_titles(value)
            for key, value in schema.items()  # pyright: ignore[reportUnknownVariableType]
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]  # pyright: ignore[reportUnknownVariableType]
    return schema

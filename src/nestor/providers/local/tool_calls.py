"""Reading tool calls out of a local model's text, and the JSON schema that constrains a call.

Tool-call parsing rules. Small models are asked for ``<tool_call>{json}</tool_call>`` (Qwen's format)
but often write the call as a fenced JSON block or as bare JSON, so all three forms are read:

1. Tag blocks. Every ``<tool_call>...</tool_call>`` block is a call; the closing tag may be missing
   (output cut at the end, or a second ``<tool_call>`` starts). The body is decoded with
   ``JSONDecoder.raw_decode``, so trailing garbage after the JSON (a stray brace) is ignored; a fence
   around the JSON is tolerated. The tags make the intent unambiguous, so a call naming an unknown
   tool is still a call (the agent loop answers "unknown tool"). A body that is not JSON or not
   call-shaped stays in the text, and its raw body is listed in ``ParsedOutput.malformed``.
2. Fenced blocks. A fence with info string ``json`` or none, whose content is one or more JSON values
   that are all call-shaped and all name a known tool, is replaced by those calls. Any other fence
   stays text: the model may be showing JSON to the user.
3. Bare JSON. When the steps above found nothing, output that is entirely JSON (one value, or several
   separated by whitespace) of call-shaped objects naming known tools becomes those calls.

Call shape: ``{"name": str, "arguments": object}``; ``"parameters"`` is accepted for ``"arguments"``,
arguments given as a JSON string are decoded, and the OpenAI-style ``{"function": {...}}`` wrapper is
unwrapped. Arrays of call-shaped objects are parallel calls. Inside tags only, missing arguments
mean ``{}`` (a call to a tool without parameters). Trailing commas and other invalid JSON are not
repaired. Calls come out in the order they appear.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai.tools import ToolDefinition

__all__ = ["ParsedCall", "ParsedOutput", "call_json_schema", "parse_tool_calls"]


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One tool call found in the model's output."""

    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class ParsedOutput:
    """The model's output split into visible text and tool calls.

    Attributes:
        text: The output with the call markup removed, stripped.
        calls: The calls, in the order they appear.
        malformed: Raw bodies of ``<tool_call>`` blocks that held no readable call (left in ``text``).

    """

    text: str
    calls: list[ParsedCall] = field(default_factory=list[ParsedCall])
    malformed: list[str] = field(default_factory=list[str])


_TAG_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
# A fence opens at a line start and closes at a line holding only ``` (or the end of the output);
# matching whole fences keeps the closing ``` of one block from being read as the opening of another.
_FENCE_RE = re.compile(
    r"^[ \t]*```[ \t]*([^\s`]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.DOTALL | re.MULTILINE
)
_DECODER = json.JSONDecoder()


def parse_tool_calls(text: str, tool_names: Collection[str]) -> ParsedOutput:
    """Find the tool calls in the model's output (see the module docstring for the rules).

    Args:
        text: The model's output.
        tool_names: The names of the tools offered; fenced and bare JSON must name one of them.

    """
    known = frozenset(tool_names)
    calls: list[ParsedCall] = []
    malformed: list[str] = []
    visible: list[str] = []
    position = 0
    for match in _TAG_RE.finditer(text):
        visible.append(_take_fenced_calls(text[position : match.start()], known, calls))
        found = _calls_in_tag(match.group(1))
        if found is None:
            malformed.append(match.group(1).strip())
            visible.append(match.group(0))
        else:
            calls.extend(found)
        position = match.end()
    visible.append(_take_fenced_calls(text[position:], known, calls))
    rest = "".join(visible).strip()
    if not calls and not malformed:
        bare = _known_calls(_decode_all(rest), known)
        if bare:
            return ParsedOutput("", bare)
    return ParsedOutput(rest, calls, malformed)


def _calls_in_tag(body: str) -> list[ParsedCall] | None:
    body = body.strip()
    if body.startswith("```"):
        body = body.partition("\n")[2].rstrip().removesuffix("```")
    try:
        value, _ = _DECODER.raw_decode(body.strip())
    except json.JSONDecodeError:
        return None
    items = cast(list[Any], value) if isinstance(value, list) else [value]
    found = [_as_call(item, arguments_required=False) for item in items]
    if not found or any(call is None for call in found):
        return None
    return [call for call in found if call is not None]


def _take_fenced_calls(segment: str, known: frozenset[str], calls: list[ParsedCall]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(1).lower() not in ("", "json"):
            return match.group(0)
        found = _known_calls(_decode_all(match.group(2)), known)
        if not found:
            return match.group(0)
        calls.extend(found)
        return ""

    return _FENCE_RE.sub(replace, segment)


def _decode_all(text: str) -> list[Any] | None:
    """Every JSON value in ``text`` (separated by whitespace only), arrays flattened; None if not all JSON."""
    values: list[Any] = []
    position, end = 0, len(text)
    while True:
        while position < end and text[position].isspace():
            position += 1
        if position == end:
            return values or None
        try:
            value, position = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        values.extend(cast(list[Any], value) if isinstance(value, list) else [value])


def _known_calls(values: list[Any] | None, known: frozenset[str]) -> list[ParsedCall]:
    """The calls, if every value is a call to a known tool; else none at all."""
    if not values:
        return []
    calls = [_as_call(value, arguments_required=True) for value in values]
    if any(call is None or call.name not in known for call in calls):
        return []
    return [call for call in calls if call is not None]


def _as_call(value: Any, *, arguments_required: bool) -> ParsedCall | None:
    if not isinstance(value, dict):
        return None
    shape = cast(dict[str, Any], value)
    if isinstance(shape.get("function"), dict):
        shape = cast(dict[str, Any], shape["function"])
    name = shape.get("name")
    key = "arguments" if "arguments" in shape else "parameters"
    if not isinstance(name, str) or not name or (arguments_required and key not in shape):
        return None
    arguments = shape.get(key)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None
    if arguments is None and not arguments_required:
        arguments = {}
    if not isinstance(arguments, dict):
        return None
    return ParsedCall(name, cast(dict[str, Any], arguments))


# -- the JSON schema of one call -------------------------------------------------------------------

_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_RULE_UNSAFE_RE = re.compile(r"[^A-Za-z0-9-]+")


def call_json_schema(tool_definitions: Sequence[ToolDefinition]) -> dict[str, Any]:
    """The JSON schema of one call ``{"name": ..., "arguments": ...}`` to any of the tools.

    An ``anyOf`` with one branch per tool. Each tool's ``$defs`` are hoisted to the top level under
    ``"<tool>-<name>"`` so that two tools' definitions cannot collide and every ``$ref`` resolves in
    the combined document; a reference into the tool's own root (``"#"``, ``"#/properties/..."``)
    points at a hoisted copy of its parameters schema under ``"<tool>"``. Hoisted names hold only
    ``[A-Za-z0-9-]``: llama.cpp's schema-to-grammar converter turns a definition's name into a rule
    name by replacing other characters, but refers to a definition it is still converting (a
    recursive one) by its raw name, which would then name no rule.

    Raises:
        ValueError: No tools were given.

    """
    if not tool_definitions:
        raise ValueError("a call schema needs at least one tool")
    branches: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for tool in tool_definitions:
        arguments = _hoist_definitions(tool.name, tool.parameters_json_schema, defs)
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": arguments},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


def _hoist_definitions(tool_name: str, schema: Mapping[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Return the tool's schema with its refs rewritten, adding its definitions to ``defs``."""
    own_defs: dict[str, Any] = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    root = {
        key: value for key, value in schema.items() if key not in ("$defs", "definitions", "$schema", "$id")
    }
    taken = set(defs)
    root_name = _free_name(tool_name, taken)
    renamed = {name: _free_name(f"{tool_name}-{name}", taken) for name in own_defs}
    uses_root = False

    def rewrite_ref(ref: str) -> str:
        nonlocal uses_root
        for base in ("#/$defs/", "#/definitions/"):
            if ref.startswith(base):
                name, slash, rest = ref.removeprefix(base).partition("/")
                target = renamed.get(_pointer_unescape(name))
                return f"#/$defs/{target}{slash}{rest}" if target else ref
        if ref == "#" or ref.startswith("#/"):
            uses_root = True
            return f"#/$defs/{root_name}{ref[1:]}"
        return ref

    rewritten_root = _rewrite_refs(root, rewrite_ref)
    for name, definition in own_defs.items():
        defs[renamed[name]] = _rewrite_refs(definition, rewrite_ref)
    if uses_root:
        defs[root_name] = rewritten_root
    return rewritten_root


def _free_name(wanted: str, taken: set[str]) -> str:
    base = _RULE_UNSAFE_RE.sub("-", wanted)
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    taken.add(name)
    return name


def _rewrite_refs(node: Any, rewrite: Callable[[str], str]) -> Any:
    if isinstance(node, list):
        return [_rewrite_refs(item, rewrite) for item in cast(Iterable[Any], node)]
    if not isinstance(node, dict):
        return node
    rewritten: dict[str, Any] = {}
    for key, value in cast(dict[str, Any], node).items():
        if key == "$ref" and isinstance(value, str):
            rewritten[key] = rewrite(value)
        elif key in _DATA_KEYWORDS:
            rewritten[key] = value
        elif key in _NAME_MAPS and isinstance(value, dict):
            # Keys here are names (a parameter may well be called "default"), each mapped to a schema.
            schemas = cast(dict[str, Any], value)
            rewritten[key] = {name: _rewrite_refs(schema, rewrite) for name, schema in schemas.items()}
        else:
            rewritten[key] = _rewrite_refs(value, rewrite)
    return rewritten


def _pointer_unescape(name: str) -> str:
    return name.replace("~1", "/").replace("~0", "~")

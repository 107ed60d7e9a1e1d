"""Reading tool calls out of a local model's text, and the JSON schema of one call."""

from __future__ import annotations

import json
import re
from typing import Any, cast

import jsonschema
import pytest
from pydantic import BaseModel
from pydantic_ai.tools import ToolDefinition

from nestor.providers.local.tool_calls import ParsedCall, call_json_schema, parse_tool_calls
from tests.providers.local.tools import GREP, TOOLS, VIEW

# -- parse_tool_calls ------------------------------------------------------------------------------


def test_tag_calls_with_text_around() -> None:
    out = parse_tool_calls(
        'Let me look.\n<tool_call>\n{"name": "grep", "arguments": {"pattern": "x"}}\n</tool_call>\nDone.',
        TOOLS,
    )
    assert out.calls == [ParsedCall("grep", {"pattern": "x"})]
    assert "Let me look." in out.text and "Done." in out.text and "tool_call" not in out.text
    assert out.malformed == []


def test_tag_without_closing_tag() -> None:
    out = parse_tool_calls('<tool_call>\n{"name": "view", "arguments": {"path": "a.py"}}', TOOLS)
    assert out.calls == [ParsedCall("view", {"path": "a.py"})] and out.text == ""
    two = parse_tool_calls(
        '<tool_call>{"name": "view", "arguments": {"path": "a"}}'
        '<tool_call>{"name": "grep", "arguments": {"pattern": "b"}}',
        TOOLS,
    )
    assert [c.name for c in two.calls] == ["view", "grep"]


def test_tag_tolerates_trailing_garbage_fences_and_lists() -> None:
    out = parse_tool_calls(
        '<tool_call>\n{"name": "grep", "arguments": {"pattern": "x"}}}\n</tool_call>', TOOLS
    )
    assert out.calls == [ParsedCall("grep", {"pattern": "x"})]
    fenced = parse_tool_calls(
        '<tool_call>\n```json\n{"name": "view", "arguments": {"path": "a"}}\n```\n</tool_call>', TOOLS
    )
    assert fenced.calls == [ParsedCall("view", {"path": "a"})]
    listed = parse_tool_calls(
        '<tool_call>[{"name": "view", "arguments": {}}, {"name": "grep", "arguments": {}}]</tool_call>', TOOLS
    )
    assert [c.name for c in listed.calls] == ["view", "grep"]


def test_tag_naming_an_unknown_tool_is_still_a_call() -> None:
    out = parse_tool_calls('<tool_call>{"name": "deploy", "arguments": {}}</tool_call>', TOOLS)
    assert out.calls == [ParsedCall("deploy", {})]


def test_tag_without_arguments_means_empty_arguments() -> None:
    out = parse_tool_calls('<tool_call>{"name": "view"}</tool_call>', TOOLS)
    assert out.calls == [ParsedCall("view", {})]


def test_malformed_tag_body_stays_text_and_is_reported() -> None:
    out = parse_tool_calls("Trying: <tool_call>{not json}</tool_call>", TOOLS)
    assert out.calls == []
    assert out.malformed == ["{not json}"]
    assert "{not json}" in out.text


def test_fenced_calls_to_known_tools() -> None:
    out = parse_tool_calls(
        'I will search.\n```json\n{"name": "grep", "arguments": {"pattern": "a"}}\n```', TOOLS
    )
    assert out.calls == [ParsedCall("grep", {"pattern": "a"})] and out.text == "I will search."
    bare_fence = parse_tool_calls('```\n{"name": "view", "arguments": {"path": "b"}}\n```', TOOLS)
    assert bare_fence.calls == [ParsedCall("view", {"path": "b"})] and bare_fence.text == ""
    several = parse_tool_calls(
        '```json\n{"name": "grep", "arguments": {"pattern": "a"}}\n'
        '{"name": "view", "arguments": {"path": "b"}}\n```',
        TOOLS,
    )
    assert [c.name for c in several.calls] == ["grep", "view"]


def test_fences_that_are_not_calls_to_known_tools_stay_text() -> None:
    for text in (
        '```json\n{"name": "deploy", "arguments": {}}\n```',
        '```json\n{"status": "ok"}\n```',
        '```python\n{"name": "grep", "arguments": {"pattern": "a"}}\n```',
    ):
        out = parse_tool_calls(text, TOOLS)
        assert (out.calls, out.text) == ([], text), text


def test_a_closing_fence_is_not_read_as_an_opening_one() -> None:
    text = (
        "Here is code:\n```python\nprint(1)\n```\nNow:\n"
        '```json\n{"name": "view", "arguments": {"path": "a"}}\n```'
    )
    out = parse_tool_calls(text, TOOLS)
    assert out.calls == [ParsedCall("view", {"path": "a"})]
    assert "print(1)" in out.text and "Now:" in out.text


def test_bare_json_calls() -> None:
    out = parse_tool_calls('{"name": "grep", "arguments": {"pattern": "a"}}', TOOLS)
    assert out.calls == [ParsedCall("grep", {"pattern": "a"})] and out.text == ""
    listed = parse_tool_calls(
        '[{"name": "grep", "arguments": {"pattern": "a"}}, {"name": "view", "arguments": {"path": "b"}}]',
        TOOLS,
    )
    assert [c.name for c in listed.calls] == ["grep", "view"]


def test_bare_json_that_is_not_a_call_stays_text() -> None:
    for text in (
        '{"name": "other", "arguments": {}}',
        '{"a": 1}',
        "[1, 2]",
        "42",
        'Text then {"name": "grep", "arguments": {}}',
    ):
        out = parse_tool_calls(text, TOOLS)
        assert (out.text, out.calls) == (text, []), text


def test_call_shape_variants() -> None:
    for text in (
        '{"name": "grep", "parameters": {"pattern": "a"}}',
        '{"name": "grep", "arguments": "{\\"pattern\\": \\"a\\"}"}',
        '{"function": {"name": "grep", "arguments": {"pattern": "a"}}}',
    ):
        assert parse_tool_calls(text, TOOLS).calls == [ParsedCall("grep", {"pattern": "a"})], text


def test_calls_keep_the_order_they_appear_in() -> None:
    text = (
        '<tool_call>{"name": "view", "arguments": {"path": "1"}}</tool_call>\n'
        '```json\n{"name": "grep", "arguments": {"pattern": "2"}}\n```\n'
        '<tool_call>{"name": "view", "arguments": {"path": "3"}}</tool_call>'
    )
    out = parse_tool_calls(text, TOOLS)
    assert [next(iter(c.arguments.values())) for c in out.calls] == ["1", "2", "3"]


def test_bare_json_counts_only_as_the_whole_output() -> None:
    text = (
        '<tool_call>{"name": "view", "arguments": {"path": "a"}}</tool_call>\n'
        '{"name": "grep", "arguments": {"pattern": "b"}}'
    )
    out = parse_tool_calls(text, TOOLS)
    assert [c.name for c in out.calls] == ["view"]
    assert '{"name": "grep"' in out.text


def test_plain_text_has_no_calls() -> None:
    out = parse_tool_calls("  Just an answer.\n", TOOLS)
    assert out.calls == [] and out.text == "Just an answer." and out.malformed == []


# -- call_json_schema ------------------------------------------------------------------------------


def resolve(root: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#"), ref
    node: Any = root
    for part in ref[2:].split("/") if ref != "#" else []:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def all_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in cast(dict[str, Any], node).values() for ref in all_refs(value)]
    if isinstance(node, list):
        return [ref for item in cast(list[Any], node) for ref in all_refs(item)]
    return []


TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}


def valid(schema: Any, value: Any, root: dict[str, Any]) -> bool:
    """A validator for the JSON-schema subset these tests produce, small enough to read next to them.

    The whole schema is also checked with jsonschema (a dev dependency) below.
    """
    if "$ref" in schema:
        return valid(resolve(root, schema["$ref"]), value, root)
    if "anyOf" in schema and not any(valid(branch, value, root) for branch in schema["anyOf"]):
        return False
    if "const" in schema and value != schema["const"]:
        return False
    if "type" in schema:
        if isinstance(value, bool) and schema["type"] in ("integer", "number"):
            return False
        if not isinstance(value, TYPES[schema["type"]]):
            return False
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        if any(key not in value for key in schema.get("required", [])):
            return False
        for key, item in cast(dict[str, Any], value).items():
            if key in properties:
                if not valid(properties[key], item, root):
                    return False
            elif schema.get("additionalProperties") is False:
                return False
    if isinstance(value, list) and "items" in schema:
        return all(valid(schema["items"], item, root) for item in cast(list[Any], value))
    return True


class Location(BaseModel):
    path: str
    line: int


class EditArgs(BaseModel):
    target: Location
    others: list[Location] = []


class Location2(BaseModel):
    url: str


class FetchArgs(BaseModel):
    # A parameter named like a JSON-schema keyword must still have its refs rewritten.
    default: Location2


class Node(BaseModel):
    name: str
    children: list[Node] = []


def tool(name: str, model: type[BaseModel]) -> ToolDefinition:
    return ToolDefinition(name=name, parameters_json_schema=model.model_json_schema())


def test_call_schema_is_an_any_of_over_the_tools() -> None:
    schema = call_json_schema([GREP, VIEW])
    assert schema == {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": "grep"}, "arguments": GREP.parameters_json_schema},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"name": {"const": "view"}, "arguments": VIEW.parameters_json_schema},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
        ]
    }
    assert valid(schema, {"name": "grep", "arguments": {"pattern": "x"}}, schema)
    assert not valid(schema, {"name": "grep", "arguments": {"path": "x"}}, schema)
    assert not valid(schema, {"name": "rm", "arguments": {}}, schema)
    assert not valid(schema, {"name": "view", "arguments": {"path": "a"}, "extra": 1}, schema)
    with pytest.raises(ValueError):
        call_json_schema([])


def test_call_schema_hoists_definitions_without_collisions() -> None:
    edit, fetch = tool("edit", EditArgs), tool("fetch", FetchArgs)
    assert "$defs" in edit.parameters_json_schema
    schema = call_json_schema([edit, fetch, GREP])
    assert set(schema["$defs"]) == {"edit-Location", "fetch-Location2"}
    assert all(isinstance(resolve(schema, ref), dict) for ref in all_refs(schema))
    assert all("$defs" not in branch["properties"]["arguments"] for branch in schema["anyOf"])
    good = {
        "name": "edit",
        "arguments": {"target": {"path": "a.py", "line": 3}, "others": [{"path": "b", "line": 1}]},
    }
    assert valid(schema, good, schema)
    assert not valid(schema, {"name": "edit", "arguments": {"target": {"path": "a.py", "line": "3"}}}, schema)
    assert valid(schema, {"name": "fetch", "arguments": {"default": {"url": "u"}}}, schema)
    assert not valid(schema, {"name": "fetch", "arguments": {"default": {"path": "u"}}}, schema)


def test_call_schema_keeps_recursive_and_root_references() -> None:
    recursive = call_json_schema([tool("tree", Node)])
    refs = all_refs(recursive)
    assert refs and all(isinstance(resolve(recursive, ref), dict) for ref in refs)
    nested = {
        "name": "tree",
        "arguments": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]},
    }
    assert valid(recursive, nested, recursive)
    assert not valid(
        recursive, {"name": "tree", "arguments": {"name": "a", "children": [{"name": 1}]}}, recursive
    )

    self_ref = ToolDefinition(
        name="walk",
        parameters_json_schema={
            "type": "object",
            "properties": {"label": {"type": "string"}, "next": {"$ref": "#"}},
            "required": ["label"],
        },
    )
    schema = call_json_schema([self_ref])
    assert schema["$defs"]["walk"]["properties"]["next"] == {"$ref": "#/$defs/walk"}
    assert valid(schema, {"name": "walk", "arguments": {"label": "a", "next": {"label": "b"}}}, schema)
    assert not valid(schema, {"name": "walk", "arguments": {"label": "a", "next": {"label": 2}}}, schema)


def test_hoisted_names_are_safe_grammar_rule_names() -> None:
    generic = ToolDefinition(
        name="read_file",
        parameters_json_schema={
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node_int_"}},
            "$defs": {
                "Node_int_": {
                    "type": "object",
                    "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node_int_"}}},
                },
                "Node-int-": {"type": "string"},
            },
        },
    )
    schema = call_json_schema([generic, tool("read-file", Node), tool("read.file", Node)])
    assert set(schema["$defs"]) == {
        "read-file-Node-int-",
        "read-file-Node-int--2",
        "read-file-Node",
        "read-file-Node-2",
    }
    assert schema["$defs"]["read-file-Node-int-"]["properties"]["kids"]["items"] == {
        "$ref": "#/$defs/read-file-Node-int-"
    }
    assert all(isinstance(resolve(schema, ref), dict) for ref in all_refs(schema))


def test_call_schema_converts_to_a_complete_llama_grammar() -> None:
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    schema = call_json_schema([tool("read_file", Node), tool("edit", EditArgs), GREP])
    grammar: str = llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines() if " ::= " in line)
    bodies = " ".join(re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', " ", body) for body in rules.values())
    referenced = set(re.findall(r"[A-Za-z][A-Za-z0-9-]*(?:[._][A-Za-z0-9_.-]+)?", bodies))
    assert referenced <= set(rules), referenced - set(rules)


def test_call_schema_is_valid_for_jsonschema() -> None:
    schema = call_json_schema([tool("edit", EditArgs), tool("tree", Node), GREP])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"name": "tree", "arguments": {"name": "a", "children": [{"name": "b"}]}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "edit", "arguments": {"target": {"path": 1, "line": 1}}}, schema)


def test_parsed_calls_fit_the_schema() -> None:
    schema = call_json_schema([GREP, VIEW])
    out = parse_tool_calls('<tool_call>{"name": "view", "arguments": {"path": "a"}}</tool_call>', TOOLS)
    (parsed,) = out.calls
    assert valid(schema, {"name": parsed.name, "arguments": parsed.arguments}, schema)
